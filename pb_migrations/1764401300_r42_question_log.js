/// <reference path="../pb_data/types.d.ts" />
// Issue 28: the question log, the ground of the knowledge-gaps report, and the admins' decisions on its gaps. One row per chat turn (window and API):
// the question, a pseudonymous user key (an HMAC of the user id keyed per tenant: services/store/questions.py),
// what retrieval found and whether the answer was grounded. Only the tenant's admins read it; only the app's
// superuser connection writes it (every other rule is null). A tenant switch turns the log off.

migrate(
  (app) => {
    const tenants = app.findCollectionByNameOrId("tenants");
    tenants.fields.add(new BoolField({ name: "question_log_off" }));
    app.save(tenants);
    // `r42 user forget` keeps a forgotten user's suggestions, anonymous: the proposer may be empty now.
    const suggestions = app.findCollectionByNameOrId("suggestions");
    suggestions.fields.getByName("user").required = false;
    app.save(suggestions);
    app.save(
      new Collection({
        type: "base",
        name: "question_log",
        listRule: '@request.auth.id != "" && @request.auth.role = "admin" && tenant = @request.auth.tenant',
        viewRule: '@request.auth.id != "" && @request.auth.role = "admin" && tenant = @request.auth.tenant',
        createRule: null,
        updateRule: null,
        deleteRule: null,
        fields: [
          { type: "relation", name: "tenant", collectionId: tenants.id, required: true, maxSelect: 1, cascadeDelete: true },
          // hidden: only the app (superuser) reads the key and the turn's id; an admin could otherwise tie one
          // rated question (chat_feedback names its user) to every other question of that learner
          { type: "text", name: "user_key", required: true, pattern: "^[0-9a-f]{32}$", min: 32, max: 32, hidden: true },
          { type: "text", name: "turn_id", pattern: "^[0-9a-f]{0,64}$", max: 64, hidden: true },
          { type: "text", name: "question", required: true, max: 2000 },
          { type: "text", name: "channel", required: true, pattern: "^(window|api)$", max: 6 },
          { type: "text", name: "mode", pattern: "^(hybrid|fts|semantic)?$", max: 8 },
          { type: "text", name: "mode_used", max: 16 },
          { type: "number", name: "best_score" },
          { type: "number", name: "semantic" },
          { type: "json", name: "sources", maxSize: 4000 },
          { type: "json", name: "cited", maxSize: 4000 },
          { type: "bool", name: "grounded" },
          { type: "bool", name: "offline" },
          { type: "text", name: "feedback", pattern: "^(up|down)?$", max: 4 },
          { type: "autodate", name: "created", onCreate: true, onUpdate: false },
        ],
        indexes: [
          "CREATE INDEX idx_question_log_tenant_created ON question_log (tenant, created)",
          "CREATE INDEX idx_question_log_tenant_user ON question_log (tenant, user_key)",
          "CREATE INDEX idx_question_log_created ON question_log (created)",
          "CREATE INDEX idx_question_log_turn ON question_log (turn_id)",
        ],
      }),
    );
    // The admins' decisions on the gaps report's groups: ignored, or a topic created from it (its slug).
    app.save(
      new Collection({
        type: "base",
        name: "knowledge_gaps",
        listRule: '@request.auth.id != "" && @request.auth.role = "admin" && tenant = @request.auth.tenant',
        viewRule: '@request.auth.id != "" && @request.auth.role = "admin" && tenant = @request.auth.tenant',
        createRule: null,
        updateRule: null,
        deleteRule: null,
        fields: [
          { type: "relation", name: "tenant", collectionId: tenants.id, required: true, maxSelect: 1, cascadeDelete: true },
          { type: "text", name: "gap", required: true, pattern: "^[0-9a-f]{12}$", min: 12, max: 12 },
          { type: "text", name: "status", required: true, pattern: "^(ignored|topic)$", max: 8 },
          { type: "text", name: "topic", max: 80 },
          { type: "text", name: "actor", max: 120, hidden: true },
          { type: "autodate", name: "created", onCreate: true, onUpdate: false },
          { type: "autodate", name: "updated", onCreate: true, onUpdate: true },
        ],
        indexes: ["CREATE UNIQUE INDEX idx_knowledge_gaps_tenant_gap ON knowledge_gaps (tenant, gap)"],
      }),
    );
  },
  (app) => {
    app.delete(app.findCollectionByNameOrId("knowledge_gaps"));
    app.delete(app.findCollectionByNameOrId("question_log"));
    const tenants = app.findCollectionByNameOrId("tenants");
    tenants.fields.removeByName("question_log_off");
    app.save(tenants);
    // suggestions.user stays optional: forgotten users' suggestions have none, and requiring it again would fail.
  },
);
