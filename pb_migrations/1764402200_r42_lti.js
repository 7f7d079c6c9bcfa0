/// <reference path="../pb_data/types.d.ts" />
// Issue 48, part 2: R42 as an LTI 1.3 tool. `lti_platforms`: the learning environments (Moodle, Canvas,
// Brightspace) registered to a tenant: issuer, client id, deployment ids, the platform's key set and sign-in URLs,
// and what its instructors become here. Superuser only (every rule null): the app and `r42 lti` write it.
// users gets `lti_id` ("<platform issuer>|<sub>": who the person is in that LMS; hidden, unique), which an admin's
// token may not write (users.createRule and updateRule).

migrate(
  (app) => {
    const tenants = app.findCollectionByNameOrId("tenants");
    app.save(
      new Collection({
        type: "base",
        name: "lti_platforms",
        listRule: null,
        viewRule: null,
        createRule: null,
        updateRule: null,
        deleteRule: null,
        fields: [
          { type: "relation", name: "tenant", collectionId: tenants.id, maxSelect: 1, required: true, cascadeDelete: true },
          { type: "url", name: "issuer", required: true },
          { type: "text", name: "client_id", required: true, max: 255 },
          { type: "json", name: "deployment_ids", required: true, maxSize: 10000 },
          { type: "url", name: "jwks_url", required: true },
          { type: "url", name: "auth_url", required: true },
          { type: "url", name: "token_url", required: false },
          { type: "select", name: "instructor_role", values: ["admin", "learner"], maxSelect: 1, required: true },
          { type: "autodate", name: "created", onCreate: true, onUpdate: false },
        ],
        indexes: ["CREATE UNIQUE INDEX idx_lti_platforms_client ON lti_platforms (issuer, client_id)"],
      }),
    );
    const users = app.findCollectionByNameOrId("users");
    users.fields.add(new TextField({ name: "lti_id", max: 1300, hidden: true }));
    users.addIndex("idx_users_lti_id", true, "lti_id", "lti_id != ''");
    users.createRule = `(${users.createRule}) && @request.body.lti_id:isset = false`;
    users.updateRule = `(${users.updateRule}) && @request.body.lti_id:isset = false`;
    app.save(users);
  },
  (app) => {
    app.delete(app.findCollectionByNameOrId("lti_platforms"));
    const users = app.findCollectionByNameOrId("users");
    users.removeIndex("idx_users_lti_id");
    users.fields.removeByName("lti_id");
    const strip = (rule) => rule.replace(/^\((.*)\) && @request\.body\.lti_id:isset = false$/s, "$1");
    users.createRule = strip(users.createRule);
    users.updateRule = strip(users.updateRule);
    app.save(users);
  },
);
