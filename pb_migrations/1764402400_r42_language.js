/// <reference path="../pb_data/types.d.ts" />
// Issue 52: a language per person. `users.language` is the person's own choice ("" until they choose: then their
// organisation's), `tenants.language` the organisation's ("" is Dutch). Only the languages R42 has a catalogue
// for (r42_app/locale/): a select field, so no writer stores another. A person sets their own through the app
// (PATCH /api/me, the account menu), which writes as the superuser; the users collection's rules are unchanged.

migrate(
  (app) => {
    for (const name of ["users", "tenants"]) {
      const collection = app.findCollectionByNameOrId(name);
      collection.fields.add(new SelectField({ name: "language", values: ["nl", "en"], maxSelect: 1 }));
      app.save(collection);
    }
  },
  (app) => {
    for (const name of ["users", "tenants"]) {
      const collection = app.findCollectionByNameOrId(name);
      collection.fields.removeByName("language");
      app.save(collection);
    }
  },
);
