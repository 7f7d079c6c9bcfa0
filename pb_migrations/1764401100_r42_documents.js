/// <reference path="../pb_data/types.d.ts" />
// Issue 24: documents in. An imported file (PDF, Word, slides, HTML, Markdown, text) is kept here with its
// hash; its topics (the document's topic and one per section) carry the document's id in `document`.
// Only the R42 server writes documents (it parses files in a sandbox first); signed-in users of the tenant
// may read the row (the file itself reaches them through the app, which checks the tenant).

const MAX_FILE_BYTES = 50 * 1024 * 1024; // core/documents.py MAX_FILE_BYTES

migrate(
  (app) => {
    const tenants = app.findCollectionByNameOrId("tenants");
    const sameTenant = '@request.auth.id != "" && tenant = @request.auth.tenant';
    app.save(
      new Collection({
        type: "base",
        name: "documents",
        listRule: sameTenant,
        viewRule: sameTenant,
        createRule: null,
        updateRule: null,
        deleteRule: null,
        fields: [
          { type: "relation", name: "tenant", collectionId: tenants.id, required: true, maxSelect: 1, cascadeDelete: true },
          // the document's key: the slug of its file name; importing a file of the same name updates it
          { type: "text", name: "key", required: true, max: 80, pattern: "^[a-z0-9]+(?:-[a-z0-9]+)*$" },
          { type: "text", name: "topic", required: true, max: 80, pattern: "^[a-z0-9]+(?:-[a-z0-9]+)*$" },
          { type: "text", name: "filename", required: true, max: 255 },
          { type: "select", name: "kind", values: ["pdf", "docx", "pptx", "md", "html", "txt"], maxSelect: 1, required: true },
          { type: "text", name: "sha256", required: true, min: 64, max: 64, pattern: "^[0-9a-f]{64}$" },
          { type: "number", name: "size", min: 0, max: MAX_FILE_BYTES, onlyInt: true },
          { type: "number", name: "pages", min: 0, onlyInt: true },
          { type: "file", name: "file", required: true, maxSelect: 1, maxSize: MAX_FILE_BYTES, protected: true },
          { type: "autodate", name: "created", onCreate: true, onUpdate: false },
          { type: "autodate", name: "updated", onCreate: true, onUpdate: true },
        ],
        indexes: [
          "CREATE UNIQUE INDEX idx_documents_tenant_key ON documents (tenant, key)",
          "CREATE UNIQUE INDEX idx_documents_tenant_topic ON documents (tenant, topic)",
        ],
      }),
    );
    // A document's topics and its file go in one batch request (all or nothing): room for a 50 MB file next to the
    // 16 MB of JSON the app sends at most (kb_store.BATCH_BYTES). Batches stay the server's (pb_hooks/).
    const settings = app.settings();
    settings.batch.maxBodySize = 80 * 1024 * 1024;
    app.save(settings);
    const topics = app.findCollectionByNameOrId("topics");
    // the id of the document a topic was made from ("" for a topic written by hand)
    topics.fields.add(new TextField({ name: "document", max: 15 }));
    topics.addIndex("idx_topics_tenant_document", false, "tenant, document", "");
    // Only the server ties a topic to a document (an admin's token may not: it would move the document's
    // "Origineel" link, or make a hand-written topic go when the document is deleted).
    topics.createRule = `(${topics.createRule}) && @request.body.document:isset = false`;
    topics.updateRule = `(${topics.updateRule}) && @request.body.document:isset = false`;
    app.save(topics);
  },
  (app) => {
    const settings = app.settings();
    settings.batch.maxBodySize = 32 * 1024 * 1024;
    app.save(settings);
    const topics = app.findCollectionByNameOrId("topics");
    const suffix = " && @request.body.document:isset = false";
    for (const rule of ["createRule", "updateRule"]) {
      const value = topics[rule] || "";
      if (value.endsWith(suffix)) topics[rule] = value.slice(1, -suffix.length - 1);
    }
    topics.removeIndex("idx_topics_tenant_document");
    topics.fields.removeByName("document");
    app.save(topics);
    app.delete(app.findCollectionByNameOrId("documents"));
  },
);
