/// <reference path="../pb_data/types.d.ts" />
// R42 schema: every collection of DESIGN.md, with tenant-scoped API rules.
// Rules are the second line of defence: the app checks roles on the server too.

const SIGNED_IN = '@request.auth.id != ""';
const SAME_TENANT = "tenant = @request.auth.tenant";
const IS_ADMIN = '@request.auth.role = "admin"';
const SUPERUSER_ONLY = null;

function timestamps() {
  return [
    { type: "autodate", name: "created", onCreate: true, onUpdate: false },
    { type: "autodate", name: "updated", onCreate: true, onUpdate: true },
  ];
}

migrate(
  (app) => {
    const settings = app.settings();
    // The app writes topics, relations and outbox rows in one batch request (all or nothing).
    settings.batch.enabled = true;
    settings.batch.maxRequests = 1000;
    settings.batch.timeout = 30;
    settings.batch.maxBodySize = 64 * 1024 * 1024;
    app.save(settings);

    const tenants = new Collection({
      type: "base",
      name: "tenants",
      listRule: `${SIGNED_IN} && id = @request.auth.tenant`,
      viewRule: `${SIGNED_IN} && id = @request.auth.tenant`,
      createRule: SUPERUSER_ONLY,
      updateRule: SUPERUSER_ONLY,
      deleteRule: SUPERUSER_ONLY,
      fields: [
        { type: "text", name: "slug", required: true, max: 80, pattern: "^[a-z0-9]+(-[a-z0-9]+)*$" },
        { type: "text", name: "name", required: true, max: 200 },
        { type: "bool", name: "chatbot_enabled" },
        { type: "json", name: "chatbot_default_capabilities", maxSize: 20000 },
        { type: "number", name: "credits" },
        ...timestamps(),
      ],
      indexes: ["CREATE UNIQUE INDEX idx_tenants_slug ON tenants (slug)"],
    });
    app.save(tenants);

    const users = app.findCollectionByNameOrId("users");
    users.fields.add(
      new RelationField({ name: "tenant", collectionId: tenants.id, maxSelect: 1, required: true, cascadeDelete: false }),
    );
    users.fields.add(new SelectField({ name: "role", values: ["learner", "admin"], maxSelect: 1, required: true }));
    // No self sign-up, no self-service role or tenant changes: accounts are provisioned by operators.
    users.listRule = `id = @request.auth.id || (${IS_ADMIN} && ${SAME_TENANT})`;
    users.viewRule = users.listRule;
    users.createRule = SUPERUSER_ONLY;
    users.updateRule = SUPERUSER_ONLY;
    users.deleteRule = SUPERUSER_ONLY;
    app.save(users);

    const tenantField = (required) => ({
      type: "relation",
      name: "tenant",
      collectionId: tenants.id,
      maxSelect: 1,
      required: required,
      cascadeDelete: true,
    });
    const userField = (name, required) => ({
      type: "relation",
      name: name,
      collectionId: users.id,
      maxSelect: 1,
      required: required,
      cascadeDelete: false,
    });
    const slugField = (name) => ({ type: "text", name: name, required: true, max: 80, pattern: "^[a-z0-9]+(-[a-z0-9]+)*$" });

    // Learners read their tenant's knowledge base (and the global one); only its admins write it,
    // and an update may never move a row to another tenant.
    const kbRules = {
      listRule: `${SIGNED_IN} && (${SAME_TENANT} || tenant = "")`,
      viewRule: `${SIGNED_IN} && (${SAME_TENANT} || tenant = "")`,
      createRule: `${IS_ADMIN} && ${SAME_TENANT}`,
      updateRule: `${IS_ADMIN} && ${SAME_TENANT} && (@request.body.tenant:isset = false || @request.body.tenant = @request.auth.tenant)`,
      deleteRule: `${IS_ADMIN} && ${SAME_TENANT}`,
    };

    app.save(
      new Collection({
        type: "base",
        name: "topics",
        ...kbRules,
        fields: [
          tenantField(false),
          slugField("slug"),
          { type: "text", name: "label", required: true, max: 120 },
          { type: "select", name: "type", values: ["concept", "role", "process"], maxSelect: 1, required: true },
          { type: "text", name: "description", required: true, max: 500 },
          { type: "text", name: "content", max: 20000 },
          ...timestamps(),
        ],
        indexes: [
          "CREATE UNIQUE INDEX idx_topics_tenant_slug ON topics (tenant, slug)",
          "CREATE INDEX idx_topics_tenant_type ON topics (tenant, type)",
        ],
      }),
    );

    app.save(
      new Collection({
        type: "base",
        name: "relations",
        ...kbRules,
        fields: [
          tenantField(false),
          slugField("source"),
          slugField("target"),
          {
            type: "select",
            name: "type",
            values: ["related_to", "depends_on", "part_of", "executed_by"],
            maxSelect: 1,
            required: true,
          },
          ...timestamps(),
        ],
        indexes: [
          "CREATE UNIQUE INDEX idx_relations_edge ON relations (tenant, source, target, type)",
          "CREATE INDEX idx_relations_target ON relations (tenant, target)",
        ],
      }),
    );

    app.save(
      new Collection({
        type: "base",
        name: "suggestions",
        listRule: `${SAME_TENANT} && (user = @request.auth.id || ${IS_ADMIN})`,
        viewRule: `${SAME_TENANT} && (user = @request.auth.id || ${IS_ADMIN})`,
        // A learner may only file its own pending suggestion in its own tenant.
        createRule: `${SIGNED_IN} && user = @request.auth.id && ${SAME_TENANT} && status = "pending"`,
        updateRule: SUPERUSER_ONLY,
        deleteRule: SUPERUSER_ONLY,
        fields: [
          tenantField(true),
          userField("user", true),
          { type: "json", name: "delta", required: true, maxSize: 100000 },
          { type: "text", name: "reason", max: 500 },
          { type: "select", name: "status", values: ["pending", "approved", "rejected"], maxSelect: 1, required: true },
          userField("reviewed_by", false),
          { type: "date", name: "reviewed_at" },
          { type: "text", name: "review_note", max: 1000 },
          ...timestamps(),
        ],
        indexes: ["CREATE INDEX idx_suggestions_tenant_status ON suggestions (tenant, status)"],
      }),
    );

    app.save(
      new Collection({
        type: "base",
        name: "chatbot_access",
        listRule: `${SAME_TENANT} && (user = @request.auth.id || ${IS_ADMIN})`,
        viewRule: `${SAME_TENANT} && (user = @request.auth.id || ${IS_ADMIN})`,
        createRule: SUPERUSER_ONLY,
        updateRule: SUPERUSER_ONLY,
        deleteRule: SUPERUSER_ONLY,
        fields: [
          tenantField(true),
          userField("user", true),
          { type: "json", name: "capability_scopes", maxSize: 20000 },
          { type: "json", name: "overrides", maxSize: 20000 },
          ...timestamps(),
        ],
        indexes: ["CREATE UNIQUE INDEX idx_chatbot_access_user ON chatbot_access (tenant, user)"],
      }),
    );

    const superuserOnly = {
      listRule: SUPERUSER_ONLY,
      viewRule: SUPERUSER_ONLY,
      createRule: SUPERUSER_ONLY,
      updateRule: SUPERUSER_ONLY,
      deleteRule: SUPERUSER_ONLY,
    };

    app.save(
      new Collection({
        type: "base",
        name: "ai_cost_events",
        ...superuserOnly,
        fields: [
          tenantField(true),
          userField("user", false),
          { type: "text", name: "capability", required: true, max: 80 },
          { type: "text", name: "source", max: 120 },
          { type: "text", name: "model", max: 120 },
          { type: "number", name: "input_tokens", onlyInt: true },
          { type: "number", name: "output_tokens", onlyInt: true },
          { type: "number", name: "cache_write_tokens", onlyInt: true },
          { type: "number", name: "cache_read_tokens", onlyInt: true },
          { type: "number", name: "credits" },
          ...timestamps(),
        ],
        indexes: ["CREATE INDEX idx_cost_tenant_created ON ai_cost_events (tenant, created)"],
      }),
    );

    app.save(
      new Collection({
        type: "base",
        name: "outbox",
        ...superuserOnly,
        fields: [
          {
            type: "select",
            name: "type",
            values: ["rag.index.kbarticle.upsert", "rag.index.kbarticle.delete", "ai.cost.event.persist"],
            maxSelect: 1,
            required: true,
          },
          { type: "json", name: "payload", required: true, maxSize: 200000 },
          { type: "select", name: "status", values: ["pending", "done", "failed"], maxSelect: 1, required: true },
          { type: "number", name: "attempts", onlyInt: true },
          { type: "text", name: "last_error", max: 2000 },
          { type: "date", name: "available_at" },
          ...timestamps(),
        ],
        indexes: ["CREATE INDEX idx_outbox_status ON outbox (status, available_at)"],
      }),
    );

    app.save(
      new Collection({
        type: "base",
        name: "audit_log",
        ...superuserOnly,
        fields: [
          tenantField(true),
          userField("user", false),
          { type: "text", name: "tool", required: true, max: 120 },
          { type: "json", name: "arguments", maxSize: 100000 },
          { type: "text", name: "outcome", max: 2000 },
          ...timestamps(),
        ],
        indexes: ["CREATE INDEX idx_audit_tenant_created ON audit_log (tenant, created)"],
      }),
    );

    app.save(
      new Collection({
        type: "base",
        name: "quiz_sessions",
        listRule: "user = @request.auth.id",
        viewRule: "user = @request.auth.id",
        createRule: SUPERUSER_ONLY,
        updateRule: SUPERUSER_ONLY,
        deleteRule: SUPERUSER_ONLY,
        fields: [
          tenantField(true),
          userField("user", true),
          { type: "bool", name: "active" },
          { type: "date", name: "started", required: true },
          { type: "date", name: "ended" },
          { type: "date", name: "expires", required: true },
          ...timestamps(),
        ],
        indexes: ["CREATE INDEX idx_quiz_user_active ON quiz_sessions (user, active)"],
      }),
    );
  },
  (app) => {
    for (const name of [
      "quiz_sessions",
      "audit_log",
      "outbox",
      "ai_cost_events",
      "chatbot_access",
      "suggestions",
      "relations",
      "topics",
    ]) {
      app.delete(app.findCollectionByNameOrId(name));
    }
    const users = app.findCollectionByNameOrId("users");
    users.fields.removeByName("tenant");
    users.fields.removeByName("role");
    app.save(users);
    app.delete(app.findCollectionByNameOrId("tenants"));
  },
);
