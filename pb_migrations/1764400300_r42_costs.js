/// <reference path="../pb_data/types.d.ts" />
// Issue 12: AI cost events carry their turn and USD cost; tenants get an unlimited-plan flag and a
// plan name (credits stay a plain number: 1 credit = USD 0.001 of model cost).

migrate(
  (app) => {
    const events = app.findCollectionByNameOrId("ai_cost_events");
    events.fields.add(new TextField({ name: "turn_id", max: 64 }));
    events.fields.add(new NumberField({ name: "cost_usd" }));
    events.indexes.push("CREATE INDEX idx_cost_tenant_source ON ai_cost_events (tenant, source, created)");
    events.indexes.push("CREATE INDEX idx_cost_tenant_user ON ai_cost_events (tenant, user, created)");
    app.save(events);

    const tenants = app.findCollectionByNameOrId("tenants");
    tenants.fields.add(new BoolField({ name: "credits_unlimited" }));
    tenants.fields.add(new TextField({ name: "plan", max: 40 }));
    app.save(tenants);
  },
  (app) => {
    const events = app.findCollectionByNameOrId("ai_cost_events");
    events.fields.removeByName("turn_id");
    events.fields.removeByName("cost_usd");
    events.indexes = events.indexes.filter((i) => !i.includes("idx_cost_tenant_source") && !i.includes("idx_cost_tenant_user"));
    app.save(events);
    const tenants = app.findCollectionByNameOrId("tenants");
    tenants.fields.removeByName("credits_unlimited");
    tenants.fields.removeByName("plan");
    app.save(tenants);
  },
);
