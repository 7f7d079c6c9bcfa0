/// <reference path="../pb_data/types.d.ts" />
// Issue 46: a tenant can be disabled by an operator (`r42 tenant disable`) and enabled again; nothing is deleted.
// `state` is "active" or "disabled" (a row written before this migration has "" and counts as active). The wall:
// - `users.authRule`: PocketBase issues no token to a person of a disabled tenant (403 after the right password);
// - pb_hooks/r42_sessions.js: every record, file and realtime request made with the token of such a person is
//   refused with 403 while the tenant is disabled (tokens issued before stay valid: enabling it again lets them in).

migrate(
  (app) => {
    const tenants = app.findCollectionByNameOrId("tenants");
    tenants.fields.add(new SelectField({ name: "state", values: ["active", "disabled"], maxSelect: 1, required: false }));
    app.save(tenants);
    app.db().newQuery("UPDATE tenants SET state = 'active' WHERE state = '' OR state IS NULL").execute();

    const users = app.findCollectionByNameOrId("users");
    users.authRule = 'tenant.state != "disabled"';
    app.save(users);
  },
  (app) => {
    const users = app.findCollectionByNameOrId("users");
    users.authRule = "";
    app.save(users);
    const tenants = app.findCollectionByNameOrId("tenants");
    tenants.fields.removeByName("state");
    app.save(tenants);
  },
);
