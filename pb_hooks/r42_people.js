// People (issue 46), used by r42_people.pb.js (a plain module, as r42_rules.js is).
//
// Two rules every writer meets (the app's superuser, an admin's token, the dashboard), in the users' update hook:
// - the last active admin of a tenant stays an active admin (demoting, deactivating or moving them is refused);
// - a person who is deactivated loses every session at once: a new token key, so PocketBase refuses every token
//   they hold, on every worker and for every REST client.

const LAST_ADMIN = "Dit is de laatste actieve beheerder van de organisatie; maak eerst iemand anders beheerder."; // core/messages.py people.last_admin

function isActive(state) {
  return state === "active" || state === "";
}

function isActiveAdmin(record) {
  return record.getString("role") === "admin" && isActive(record.getString("state"));
}

function guardUserUpdate(app, record) {
  const before = record.original();
  if (isActiveAdmin(before) && (!isActiveAdmin(record) || record.getString("tenant") !== before.getString("tenant"))) {
    const others = app.findRecordsByFilter(
      "users",
      'tenant = {:tenant} && role = "admin" && (state = "active" || state = "") && id != {:id}',
      "",
      1,
      0,
      { tenant: before.getString("tenant"), id: record.id },
    );
    if (others.length === 0) {
      throw new BadRequestError(LAST_ADMIN, { state: new ValidationError("last_admin", LAST_ADMIN) });
    }
  }
  if (record.getString("state") === "deactivated" && before.getString("state") !== "deactivated") {
    record.refreshTokenKey(); // every token of theirs fails from now on
  }
}

module.exports = { LAST_ADMIN, guardUserUpdate };

// POST /api/r42/people/invite (the app's superuser; services/store/people.py): invited people and their links, in
// one transaction. {"people": [{"id", "email", "name", "role", "tenant"}], "invitations": [{"user", "tenant",
// "hash", "expires", "by"}], "audit": {...} or null} -> {"created": n}. An invited person has no password of
// their own until they choose one through their link; PocketBase wants one on every auth record, so they all share
// the hash of one random secret made per process (nobody knows it, and users.authRule refuses invited people
// anyway). Hashing a password per person made an import of 5,000 people take minutes (bcrypt).
const INVITE_FIELDS = ["id", "email", "name", "role", "tenant"];
const UNKNOWN_SECRET = "r42:people:unknown-secret";

function unknownSecret(users) {
  let value = $app.store().get(UNKNOWN_SECRET);
  if (!value) {
    const probe = new Record(users);
    probe.setPassword($security.randomString(48));
    value = probe.getRaw("password");
    $app.store().set(UNKNOWN_SECRET, value);
  }
  return value;
}

function invitePeople(e) {
  const body = e.requestInfo().body || {};
  const people = body.people;
  const links = body.invitations || [];
  if (!Array.isArray(people) || people.length === 0 || people.length > 1000 || !Array.isArray(links) ||
      links.length > 1000) {
    throw new BadRequestError("Need people: a list of 1 to 1000 {id, email, name, role, tenant}.");
  }
  require(`${__hooks}/r42_rules.js`).writeTransaction(e.app, (tx) => {
    const users = tx.findCollectionByNameOrId("users");
    const secret = unknownSecret(users);
    for (const person of people) {
      const record = new Record(users);
      for (const key of INVITE_FIELDS) record.set(key, person[key]);
      record.set("state", "invited");
      record.set("verified", false);
      record.set("emailVisibility", false);
      record.setRaw("password", secret);
      tx.save(record);
    }
    const invitations = tx.findCollectionByNameOrId("invitations");
    for (const link of links) {
      const row = new Record(invitations);
      for (const key of ["user", "tenant", "hash", "expires", "by"]) row.set(key, link[key]);
      row.set("kind", "invite");
      tx.save(row);
    }
    if (body.audit) {
      const audit = new Record(tx.findCollectionByNameOrId("audit_log"));
      for (const key of ["tenant", "user", "tool", "arguments", "outcome"]) audit.set(key, body.audit[key]);
      tx.save(audit);
    }
  });
  return e.json(200, { created: people.length });
}

module.exports.invitePeople = invitePeople;
