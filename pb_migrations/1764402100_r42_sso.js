/// <reference path="../pb_data/types.d.ts" />
// Issue 48: sign in with the organisation's identity provider (OIDC).
//
// `tenant_sso`: one identity provider per tenant (issuer, client id, e-mail domains, admin group, whether passwords
// still work for those domains). Superuser only (every rule null): the app reads and writes it
// (services/store/sso.py); the client secret is a hidden field that no page or command shows again.
// users gets `sso_issuer` and `sso_subject` (who the person is at the provider: matched on every sign-in, unique
// together; hidden, only the app reads them) and `signs_in_with` (password | sso | lti, shown on /admin/people).
// An admin's token may not write any of the three (users.createRule and updateRule), nor a tenant's settings.

const NOT_SSO_FIELDS =
  "@request.body.sso_issuer:isset = false && @request.body.sso_subject:isset = false && " +
  "@request.body.signs_in_with:isset = false";

migrate(
  (app) => {
    const tenants = app.findCollectionByNameOrId("tenants");
    app.save(
      new Collection({
        type: "base",
        name: "tenant_sso",
        listRule: null,
        viewRule: null,
        createRule: null,
        updateRule: null,
        deleteRule: null,
        fields: [
          { type: "relation", name: "tenant", collectionId: tenants.id, maxSelect: 1, required: true, cascadeDelete: true },
          { type: "url", name: "issuer", required: true },
          { type: "text", name: "client_id", required: true, max: 255 },
          { type: "text", name: "client_secret", required: true, max: 2000, hidden: true },
          { type: "json", name: "domains", required: true, maxSize: 20000 },
          { type: "text", name: "admin_group", required: false, max: 200 },
          { type: "bool", name: "passwords" },
          { type: "autodate", name: "updated", onCreate: true, onUpdate: true },
        ],
        indexes: ["CREATE UNIQUE INDEX idx_tenant_sso_tenant ON tenant_sso (tenant)"],
      }),
    );
    const users = app.findCollectionByNameOrId("users");
    users.fields.add(new TextField({ name: "sso_issuer", max: 500, hidden: true }));
    users.fields.add(new TextField({ name: "sso_subject", max: 255, hidden: true }));
    users.fields.add(new SelectField({ name: "signs_in_with", values: ["password", "sso", "lti"], maxSelect: 1 }));
    users.addIndex("idx_users_sso_subject", true, "sso_issuer, sso_subject", "sso_subject != ''");
    users.createRule = `(${users.createRule}) && ${NOT_SSO_FIELDS}`;
    users.updateRule = `(${users.updateRule}) && ${NOT_SSO_FIELDS}`;
    app.save(users);
  },
  (app) => {
    app.delete(app.findCollectionByNameOrId("tenant_sso"));
    const users = app.findCollectionByNameOrId("users");
    users.removeIndex("idx_users_sso_subject");
    users.fields.removeByName("sso_issuer");
    users.fields.removeByName("sso_subject");
    users.fields.removeByName("signs_in_with");
    const strip = (rule) => rule.replace(/^\((.*)\) && @request\.body\.sso_issuer.*$/s, "$1");
    users.createRule = strip(users.createRule);
    users.updateRule = strip(users.updateRule);
    app.save(users);
  },
);
