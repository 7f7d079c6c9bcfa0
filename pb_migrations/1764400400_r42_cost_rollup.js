/// <reference path="../pb_data/types.d.ts" />
// Issue 12: a daily rollup of AI cost per (tenant, day, user, source, model), kept by the persister in
// the same transaction as each event, so the cost report reads a few rows per day, not every event.

migrate(
  (app) => {
    const tenants = app.findCollectionByNameOrId("tenants");
    const users = app.findCollectionByNameOrId("users");
    const daily = new Collection({
      type: "base",
      name: "ai_cost_daily",
      listRule: null,
      viewRule: null,
      createRule: null,
      updateRule: null,
      deleteRule: null,
      fields: [
        { type: "relation", name: "tenant", collectionId: tenants.id, maxSelect: 1, required: true, cascadeDelete: true },
        { type: "text", name: "day", required: true, max: 10, pattern: "^\\d{4}-\\d{2}-\\d{2}$" },
        { type: "relation", name: "user", collectionId: users.id, maxSelect: 1, required: false, cascadeDelete: false },
        { type: "text", name: "source", required: true, max: 120 },
        { type: "text", name: "model", max: 120 },
        { type: "number", name: "events", onlyInt: true },
        { type: "number", name: "input_tokens", onlyInt: true },
        { type: "number", name: "output_tokens", onlyInt: true },
        { type: "number", name: "cache_write_tokens", onlyInt: true },
        { type: "number", name: "cache_read_tokens", onlyInt: true },
        { type: "number", name: "cost_usd" },
        { type: "number", name: "credits" },
        { type: "autodate", name: "created", onCreate: true, onUpdate: false },
        { type: "autodate", name: "updated", onCreate: true, onUpdate: true },
      ],
      indexes: ["CREATE INDEX idx_cost_daily_tenant_day ON ai_cost_daily (tenant, day)"],
    });
    app.save(daily);
  },
  (app) => {
    app.delete(app.findCollectionByNameOrId("ai_cost_daily"));
  },
);
