/// <reference path="../data/pb_data/types.d.ts" />
// People (issue 46): the last active admin stays one, and a deactivation ends every session (r42_people.js).

onRecordUpdate((e) => {
  require(`${__hooks}/r42_people.js`).guardUserUpdate(e.app, e.record);
  e.next();
}, "users");

// Invited people and their links in one transaction (services/store/people.py People.invite and import_csv).
routerAdd("POST", "/api/r42/people/invite", (e) => {
  return require(`${__hooks}/r42_people.js`).invitePeople(e);
}, $apis.requireSuperuserAuth());
