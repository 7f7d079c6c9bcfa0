/// <reference path="../pb_data/types.d.ts" />
// Issue 13: every external tool call is audited with its outcome, how long it took and who confirmed it.

migrate(
  (app) => {
    const audit = app.findCollectionByNameOrId("audit_log");
    audit.fields.add(new TextField({ name: "status", max: 40 }));
    audit.fields.add(new NumberField({ name: "duration_ms", onlyInt: true }));
    audit.fields.add(new TextField({ name: "confirmed_by", max: 200 }));
    audit.indexes.push("CREATE INDEX idx_audit_tenant_tool ON audit_log (tenant, tool, created)");
    app.save(audit);
  },
  (app) => {
    const audit = app.findCollectionByNameOrId("audit_log");
    for (const name of ["status", "duration_ms", "confirmed_by"]) audit.fields.removeByName(name);
    audit.indexes = audit.indexes.filter((i) => !i.includes("idx_audit_tenant_tool"));
    app.save(audit);
  },
);
