/// <reference path="../pb_data/types.d.ts" />
// The app's own secrets that must travel with its data (services/store/app_secrets.py): the question log's key
// (issue 28), from which every learner's pseudonymous user key is made. Kept in a file of the data dir until now,
// it was not in `r42 backup`'s zip: after a restore elsewhere `r42 user forget` could no longer find a user's old
// questions. In PocketBase it is in every backup. Superuser only (every rule null), the value hidden as well.

migrate(
  (app) => {
    app.save(
      new Collection({
        type: "base",
        name: "app_secrets",
        listRule: null,
        viewRule: null,
        createRule: null,
        updateRule: null,
        deleteRule: null,
        fields: [
          { type: "text", name: "name", required: true, pattern: "^[a-z0-9_]+$", max: 64 },
          { type: "text", name: "value", required: true, min: 16, max: 200, hidden: true },
          { type: "autodate", name: "created", onCreate: true, onUpdate: false },
        ],
        indexes: ["CREATE UNIQUE INDEX idx_app_secrets_name ON app_secrets (name)"],
      }),
    );
  },
  (app) => {
    app.delete(app.findCollectionByNameOrId("app_secrets"));
  },
);
