/// <reference path="../data/pb_data/types.d.ts" />
// R42's rules inside PocketBase, for every writer (the app, the dashboard, a token on the REST API, a batch).
// `r42 serve` and the tests start PocketBase with --hooksDir pointing here. The rules live in r42_rules.js.

// Batch requests are the server's tool (all-or-nothing KB writes); a user token may not bulk-write.
onBatchRequest((e) => {
  if (!e.hasSuperuserAuth()) {
    throw new ForbiddenError("Batch requests are reserved for the R42 server.");
  }
  e.next();
});

// A user's token is never renewed: a session ends R42_SESSION_HOURS after its sign-in (the app's tokens cannot be
// refreshed at all; this holds the REST API's own to the same), so a token a script once read is worth hours.
onRecordAuthRefreshRequest((e) => {
  throw new ForbiddenError("Een sessie wordt niet verlengd; meld je opnieuw aan.");
}, "users");

onRecordAuthWithPasswordRequest((e) => {
  require(`${__hooks}/r42_rules.js`).throttleSignIn(e);
}, "users");

onRecordCreateRequest((e) => {
  require(`${__hooks}/r42_rules.js`).checkSuggestionCreate(e);
  e.next();
}, "suggestions");

// Ratings of answers (issue 21): a per-user rate for every writer, and one row per user and message (a new
// rating replaces the old one in the same transaction). Issue 44: citations only of the shape R42 makes.
onRecordCreateRequest((e) => {
  const rules = require(`${__hooks}/r42_rules.js`);
  rules.checkFeedbackCitations(e);
  rules.throttleFeedback(e);
  e.next();
}, "chat_feedback");

onRecordCreate((e) => {
  const rules = require(`${__hooks}/r42_rules.js`);
  rules.inTransaction(e, { before: (tx) => rules.deleteOldRatings(tx, e.record) });
}, "chat_feedback");

onRecordValidate((e) => {
  require(`${__hooks}/r42_rules.js`).checkRelation(e.app, e.record);
  e.next();
}, "relations");

onRecordValidate((e) => {
  require(`${__hooks}/r42_rules.js`).checkTopicUpdate(e.record);
  e.next();
}, "topics");

onRecordCreate((e) => {
  const rules = require(`${__hooks}/r42_rules.js`);
  rules.inTransaction(e, { after: (tx) => rules.writeOutbox(tx, e.record, rules.OUTBOX_UPSERT) });
}, "topics");

onRecordUpdate((e) => {
  const rules = require(`${__hooks}/r42_rules.js`);
  rules.inTransaction(e, { after: (tx) => rules.writeOutbox(tx, e.record, rules.OUTBOX_UPSERT) });
}, "topics");

onRecordDelete((e) => {
  const rules = require(`${__hooks}/r42_rules.js`);
  rules.inTransaction(e, {
    before: (tx) => rules.deleteRelationsOf(tx, e.record),
    after: (tx) => rules.writeOutbox(tx, e.record, rules.OUTBOX_DELETE),
  });
}, "topics");

// Outbox claims (issue 17): a worker leases up to `limit` due rows of the given types. The rows are
// selected and marked inside one transaction, and SQLite lets one writer in at a time, so two workers
// never get the same row while its lease runs (PocketBase's REST API has no compare-and-set).
routerAdd("POST", "/api/r42/outbox/claim", (e) => {
  return require(`${__hooks}/r42_rules.js`).claimOutbox(e);
}, $apis.requireSuperuserAuth());

// The chat turn's guard reads, in one request (issue 26; services/store/access.py turn_guard).
routerAdd("POST", "/api/r42/turn-guard", (e) => {
  return require(`${__hooks}/r42_rules.js`).turnGuard(e);
}, $apis.requireSuperuserAuth());

// API tokens of requests that arrived together, checked in one request (services/store/auth.py `checks`).
routerAdd("POST", "/api/r42/token-checks", (e) => {
  return require(`${__hooks}/r42_rules.js`).tokenChecks(e);
}, $apis.requireSuperuserAuth());

// The AI cost events of turns that ended together, written in one transaction (services/store/costs.py).
routerAdd("POST", "/api/r42/cost-events", (e) => {
  return require(`${__hooks}/r42_rules.js`).recordCosts(e);
}, $apis.requireSuperuserAuth());

// The guards of turns that arrived together, in one request (services/store/access.py turn_guards).
routerAdd("POST", "/api/r42/turn-guards", (e) => {
  return require(`${__hooks}/r42_rules.js`).turnGuards(e);
}, $apis.requireSuperuserAuth());

// The privacy rule (issue 44): a rating's user is hidden, set from the token for a user's own rating, and a rating
// is signed only by its rater; a deleted user's ratings go with them.
onRecordCreateRequest((e) => {
  require(`${__hooks}/r42_rules.js`).assignRater(e);
  e.next();
}, "chat_feedback");

onRecordValidate((e) => {
  require(`${__hooks}/r42_rules.js`).checkSigner(e.record);
  e.next();
}, "chat_feedback");

onRecordDelete((e) => {
  const rules = require(`${__hooks}/r42_rules.js`);
  rules.inTransaction(e, { before: (tx) => rules.deleteRatingsOf(tx, e.record) });
}, "users");

// `r42 user forget` (issue 44): where a person is mentioned, asked in a body; afterwards the request log's rows
// that name them go and the databases are compacted (services/store/forget.py).
routerAdd("POST", "/api/r42/mentions", (e) => {
  return require(`${__hooks}/r42_rules.js`).findMentions(e);
}, $apis.requireSuperuserAuth());

routerAdd("POST", "/api/r42/compact", (e) => {
  return require(`${__hooks}/r42_rules.js`).compact(e);
}, $apis.requireSuperuserAuth());
