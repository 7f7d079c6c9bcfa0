/// <reference path="../pb_data/types.d.ts" />
// Issue 17: outbox rows are claimed with a lease, so several `r42 worker` processes (and app backends)
// never work on the same row at once. The claim itself is the `POST /api/r42/outbox/claim` route in
// pb_hooks/r42.pb.js: it selects and leases rows inside one transaction (SQLite serialises writers).

migrate(
  (app) => {
    const outbox = app.findCollectionByNameOrId("outbox");
    outbox.fields.add(new TextField({ name: "claimed_by", max: 120 }));
    outbox.fields.add(new DateField({ name: "lease_until" }));
    outbox.addIndex("idx_outbox_due", false, "status, type, available_at, lease_until", "");
    app.save(outbox);
  },
  (app) => {
    const outbox = app.findCollectionByNameOrId("outbox");
    outbox.removeIndex("idx_outbox_due");
    outbox.fields.removeByName("claimed_by");
    outbox.fields.removeByName("lease_until");
    app.save(outbox);
  },
);
