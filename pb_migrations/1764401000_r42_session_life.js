/// <reference path="../pb_data/types.d.ts" />
// Issue 21: a user's token lives 8 hours (PocketBase's default for auth collections is 7 days, renewed on
// every refresh). The app hands browsers a token that cannot be refreshed at all (services/store/auth.py, 8 hours,
// R42_SESSION_HOURS); this caps what a direct sign-in on the REST API gets too.

const SESSION_S = 8 * 3600;

migrate(
  (app) => {
    const users = app.findCollectionByNameOrId("users");
    users.authToken.duration = SESSION_S;
    app.save(users);
  },
  (app) => {
    const users = app.findCollectionByNameOrId("users");
    users.authToken.duration = 7 * 24 * 3600;
    app.save(users);
  },
);
