/// <reference path="../pb_data/types.d.ts" />
// Issue 48, part 2: the LTI tool's own signing key (a private JWK, ~1.7 KB) is an app secret like the question
// log's key, so that backups hold it and every worker signs with the same one: app_secrets.value may be longer.

migrate(
  (app) => {
    const secrets = app.findCollectionByNameOrId("app_secrets");
    secrets.fields.getByName("value").max = 8000;
    app.save(secrets);
  },
  (app) => {
    const secrets = app.findCollectionByNameOrId("app_secrets");
    secrets.fields.getByName("value").max = 200;
    app.save(secrets);
  },
);
