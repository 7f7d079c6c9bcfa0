/// <reference path="../pb_data/types.d.ts" />
// Issue 16: thumbs up/down on an answer, stored with its question, answer and citations for the tenant's admins.

migrate(
  (app) => {
    const tenants = app.findCollectionByNameOrId("tenants");
    const users = app.findCollectionByNameOrId("users");
    app.save(
      new Collection({
        type: "base",
        name: "chat_feedback",
        // A user rates only as themselves, in their own tenant; only the tenant's admins read it; nobody edits.
        listRule: '@request.auth.id != "" && @request.auth.role = "admin" && tenant = @request.auth.tenant',
        viewRule: '@request.auth.id != "" && @request.auth.role = "admin" && tenant = @request.auth.tenant',
        createRule: '@request.auth.id != "" && user = @request.auth.id && tenant = @request.auth.tenant',
        updateRule: null,
        deleteRule: null,
        fields: [
          { type: "relation", name: "tenant", collectionId: tenants.id, required: true, maxSelect: 1, cascadeDelete: true },
          { type: "relation", name: "user", collectionId: users.id, required: true, maxSelect: 1, cascadeDelete: true },
          { type: "text", name: "rating", required: true, pattern: "^(up|down)$", max: 4 },
          { type: "text", name: "message_id", max: 64 },
          { type: "text", name: "question", max: 8000 },
          { type: "text", name: "answer", required: true, max: 20000 },
          { type: "json", name: "citations", maxSize: 8000 },
          { type: "autodate", name: "created", onCreate: true, onUpdate: false },
        ],
        indexes: ["CREATE INDEX idx_feedback_tenant_created ON chat_feedback (tenant, created)"],
      }),
    );
  },
  (app) => {
    app.delete(app.findCollectionByNameOrId("chat_feedback"));
  },
);
