/// <reference path="../data/pb_data/types.d.ts" />
// Sign-out (issue 44, finding 8): a signed-out token is refused by PocketBase itself, for the app and every REST
// client alike. The rules live in r42_sessions.js; why these hooks and not one router middleware is said there.

// Every kind of request through which a user's token reads or writes anything: 401 once that token is signed out.
onRecordsListRequest((e) => {
  require(`${__hooks}/r42_sessions.js`).refuseRevoked(e);
  e.next();
});

onRecordViewRequest((e) => {
  require(`${__hooks}/r42_sessions.js`).refuseRevoked(e);
  e.next();
});

onRecordCreateRequest((e) => {
  require(`${__hooks}/r42_sessions.js`).refuseRevoked(e);
  e.next();
});

onRecordUpdateRequest((e) => {
  require(`${__hooks}/r42_sessions.js`).refuseRevoked(e);
  e.next();
});

onRecordDeleteRequest((e) => {
  require(`${__hooks}/r42_sessions.js`).refuseRevoked(e);
  e.next();
});

onFileTokenRequest((e) => {
  require(`${__hooks}/r42_sessions.js`).refuseRevoked(e);
  e.next();
});

onRecordRequestEmailChangeRequest((e) => {
  require(`${__hooks}/r42_sessions.js`).refuseRevoked(e);
  e.next();
});

// Realtime: no subscription with a signed-out token, and a client that subscribed before its token was signed out
// loses its sign-in then (r42_sessions.js signOutRealtime).
onRealtimeSubscribeRequest((e) => {
  const sessions = require(`${__hooks}/r42_sessions.js`);
  sessions.refuseRevoked(e);
  e.next();
  sessions.noteRealtimeToken(e);
});

// The list in memory follows the table, whoever writes it.
onRecordAfterCreateSuccess((e) => {
  require(`${__hooks}/r42_sessions.js`).remember(e.record);
  e.next();
}, "revoked_tokens");

onRecordAfterDeleteSuccess((e) => {
  require(`${__hooks}/r42_sessions.js`).forget(e.record);
  e.next();
}, "revoked_tokens");

// A tenant disabled or enabled (issue 46): the map of disabled tenants follows, whoever writes the row.
onRecordAfterUpdateSuccess((e) => {
  require(`${__hooks}/r42_sessions.js`).noteTenantState(e.record);
  e.next();
}, "tenants");

onRecordAfterCreateSuccess((e) => {
  require(`${__hooks}/r42_sessions.js`).noteTenantState(e.record);
  e.next();
}, "tenants");

// "Afmelden" / "Overal afmelden" (services/store/auth.py AuthService.sign_out), and a REST client's own sign-out.
routerAdd("POST", "/api/r42/sign-out", (e) => {
  return require(`${__hooks}/r42_sessions.js`).signOut(e);
});
