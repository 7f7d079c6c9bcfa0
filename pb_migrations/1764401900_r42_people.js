/// <reference path="../pb_data/types.d.ts" />
// Issue 46: people, invited and managed by their organisation's admins.
//
// users gets `state` (invited | active | deactivated; "" is active, for rows written before) and `last_sign_in`.
// The wall, for every writer (the app uses the superuser; an admin's token may also talk to PocketBase directly):
// - authRule: no token for a person who is invited (not yet accepted) or deactivated, or whose tenant is disabled;
// - createRule: an admin (active, of an enabled tenant) invites people into their own tenant only, as learner or
//   admin, in state "invited", never verified;
// - updateRule: an admin changes the name, role (learner | admin) and state (active <-> deactivated, never of an
//   invited person) of people of their own tenant only; never tenant, e-mail, password, verified, or a superuser
//   (superusers are another collection). A person changes nothing of their own record here (the app's password
//   change checks the old password first);
// - pb_hooks/r42_people.js: the last active admin of a tenant stays one, and a deactivation ends every session.
// Passwords have at least 10 characters (core/people.py PASSWORD_MIN; the app's rules add more).
// `invitations`: single-use links (an invitation, 7 days; a password reset, 2 hours), of which only the SHA-256 of
// the token is kept. Superuser only: the app redeems them.

const ADMIN_OF_ENABLED_TENANT =
  '@request.auth.role = "admin" && @request.auth.state != "deactivated" && @request.auth.state != "invited" && ' +
  '@request.auth.tenant.state != "disabled"';
const ROLE_OK = '(@request.body.role = "learner" || @request.body.role = "admin")';

migrate(
  (app) => {
    const users = app.findCollectionByNameOrId("users");
    users.fields.add(new SelectField({ name: "state", values: ["invited", "active", "deactivated"], maxSelect: 1 }));
    users.fields.add(new DateField({ name: "last_sign_in" }));
    const password = users.fields.getByName("password");
    password.min = 10;
    password.required = false; // an invited person has none until they choose one (hashing 5,000 random ones took minutes)
    users.authRule = 'tenant.state != "disabled" && state != "deactivated" && state != "invited"';
    users.createRule =
      `${ADMIN_OF_ENABLED_TENANT} && @request.body.tenant = @request.auth.tenant && ${ROLE_OK} && ` +
      '@request.body.state = "invited" && @request.body.verified:isset = false';
    users.updateRule =
      `${ADMIN_OF_ENABLED_TENANT} && tenant = @request.auth.tenant && ` +
      "@request.body.tenant:isset = false && @request.body.email:isset = false && " +
      "@request.body.password:isset = false && @request.body.passwordConfirm:isset = false && " +
      "@request.body.oldPassword:isset = false && @request.body.verified:isset = false && " +
      "@request.body.emailVisibility:isset = false && @request.body.last_sign_in:isset = false && " +
      `(@request.body.role:isset = false || ${ROLE_OK}) && ` +
      '(@request.body.state:isset = false || (state != "invited" && ' +
      '(@request.body.state = "active" || @request.body.state = "deactivated")))';
    app.save(users);
    app.db().newQuery("UPDATE users SET state = 'active' WHERE state = '' OR state IS NULL").execute();

    const tenants = app.findCollectionByNameOrId("tenants");
    app.save(
      new Collection({
        type: "base",
        name: "invitations",
        listRule: null,
        viewRule: null,
        createRule: null,
        updateRule: null,
        deleteRule: null,
        fields: [
          { type: "relation", name: "tenant", collectionId: tenants.id, maxSelect: 1, required: true, cascadeDelete: true },
          { type: "relation", name: "user", collectionId: users.id, maxSelect: 1, required: true, cascadeDelete: true },
          { type: "select", name: "kind", values: ["invite", "reset"], maxSelect: 1, required: true },
          { type: "text", name: "hash", required: true, pattern: "^[0-9a-f]{64}$", min: 64, max: 64 },
          { type: "date", name: "expires", required: true },
          { type: "relation", name: "by", collectionId: users.id, maxSelect: 1, required: false, cascadeDelete: false },
          { type: "autodate", name: "created", onCreate: true, onUpdate: false },
        ],
        indexes: [
          "CREATE UNIQUE INDEX idx_invitations_hash ON invitations (hash)",
          "CREATE INDEX idx_invitations_user ON invitations (user, kind)",
        ],
      }),
    );
  },
  (app) => {
    app.delete(app.findCollectionByNameOrId("invitations"));
    const users = app.findCollectionByNameOrId("users");
    users.fields.removeByName("state");
    users.fields.removeByName("last_sign_in");
    users.fields.getByName("password").min = 8;
    users.authRule = 'tenant.state != "disabled"';
    users.createRule = null;
    users.updateRule = null;
    app.save(users);
  },
);
