// Sign-out (issue 44, finding 8), used by r42_sessions.pb.js and r42_rules.js (a plain module, as r42_rules.js is).
//
// "Afmelden" ends ONE token. PocketBase checks a token's signature, expiry and the user's token key, so on its own it
// can only end every token of a user at once (a new tokenKey: "Overal afmelden"). One token ends by being listed:
// its SHA-256 goes into `revoked_tokens` until it would have expired anyway, and into $app.store(), the memory of the
// one PocketBase process that every worker of the app (and every REST client) talks to. Every request of a user's
// token that can read or write (records, realtime subscriptions, file tokens, an e-mail change; the chat turn's guard
// and the app's token checks) is refused with 401 while its hash is listed: a map lookup, no database read.
//
// Per request kind rather than one router middleware (routerUse): a JS middleware holds one of the hooks' pooled
// JS runtimes for the whole request, so sixteen open realtime connections (anyone may open them) emptied the pool
// and every PocketBase request then built a runtime of its own, 1.2 ms of CPU instead of 0.2 (measured, issue 44).

const SIGNED_OUT = "Deze sessie is beëindigd; meld je opnieuw aan."; // core/messages.py auth.signed_out
// core/messages.py auth.tenant_disabled
const TENANT_OFF = "Je organisatie gebruikt R42 op dit moment niet. Vraag je beheerder wanneer het weer kan.";
const TENANT_OFF_PREFIX = "r42:tenant-off:"; // + a disabled tenant's id
const TENANT_OFF_LOADED = "r42:tenant-off:loaded";
const REVOKED = "r42:revoked:"; // + a token's SHA-256: the token's expiry (ms)
const REVOKED_LOADED = "r42:revoked:loaded";
const CLIENT_TOKEN = "r42.token"; // a realtime client's token hash, noted when it subscribes
const REALTIME_AUTH = "auth"; // PocketBase's own key for a realtime client's user (apis.RealtimeClientAuthKey)
const ROLES = ["learner", "admin"]; // services/store/auth.py ROLES; any other value reads as a learner
const PRUNE_BATCH = 500;
const MAX_TOKEN = 4096;

function pbTime(ms) {
  return new Date(ms).toISOString().replace("T", " ");
}

// The token of a request, read as PocketBase reads it (the "Bearer " prefix is optional). A record or realtime
// request event carries its request as `requestEvent.request`, a route's event as `request`.
function bearer(e) {
  const request = e.request || (e.requestEvent && e.requestEvent.request);
  const header = (request && request.header.get("Authorization")) || "";
  return header.indexOf("Bearer ") === 0 ? header.slice(7) : header;
}

function isUser(record) {
  return !!record && record.collection().name === "users";
}

function remember(row) {
  $app.store().set(REVOKED + row.getString("hash"), row.getDateTime("expires").unix() * 1000);
}

function forget(row) {
  $app.store().remove(REVOKED + row.getString("hash"));
}

// The list is read from the table once per process (after a restart too); rows written later add themselves to the
// store (`remember`, also from a record hook), so two first requests loading at once only set the same keys twice.
function loadRevoked(app) {
  if ($app.store().has(REVOKED_LOADED)) return;
  const rows = app.findRecordsByFilter("revoked_tokens", "expires > {:now}", "", 0, 0, { now: pbTime(Date.now()) });
  for (const row of rows) remember(row);
  $app.store().set(REVOKED_LOADED, true);
}

function isRevoked(app, token) {
  if (!token) return false;
  loadRevoked(app);
  const until = $app.store().get(REVOKED + $security.sha256(token));
  return !!until && until > Date.now();
}

// A request made with a signed-out token: 401. (PocketBase still takes the token itself as valid: e.auth is its user.)
// A request of a person whose tenant is disabled (issue 46, `r42 tenant disable`): 403, except reading their own
// user record (the app's token check reads it, and so learns why: the tenant's state).
function refuseRevoked(e) {
  if (!isUser(e.auth)) return;
  if (isRevoked(e.app, bearer(e))) {
    throw new UnauthorizedError(SIGNED_OUT);
  }
  if (isTenantOff(e.app, e.auth.getString("tenant")) && !(e.record && e.record.id === e.auth.id)) {
    throw new ForbiddenError(TENANT_OFF);
  }
}

// Disabled tenants, in this process's memory like the signed-out tokens: read once, then kept by the tenants' record
// hook (r42_sessions.pb.js), so a request costs a map lookup.
function loadTenantsOff(app) {
  if ($app.store().has(TENANT_OFF_LOADED)) return;
  const rows = app.findRecordsByFilter("tenants", 'state = "disabled"', "", 0, 0);
  for (const row of rows) $app.store().set(TENANT_OFF_PREFIX + row.id, true);
  $app.store().set(TENANT_OFF_LOADED, true);
}

function isTenantOff(app, tenantId) {
  if (!tenantId) return false;
  loadTenantsOff(app);
  return $app.store().has(TENANT_OFF_PREFIX + tenantId);
}

// After a tenant's row is written: the map follows, and when it was disabled, its people's realtime clients lose
// their sign-in (they hear nothing more of the tenant's records).
function noteTenantState(tenant) {
  if (tenant.getString("state") === "disabled") {
    $app.store().set(TENANT_OFF_PREFIX + tenant.id, true);
    const chunks = $app.subscriptionsBroker().chunkedClients(500);
    for (let i = 0; i < chunks.length; i++) {
      for (let j = 0; j < chunks[i].length; j++) {
        const client = chunks[i][j];
        const auth = client.get(REALTIME_AUTH);
        if (isUser(auth) && auth.getString("tenant") === tenant.id) {
          client.unset(REALTIME_AUTH);
          client.unset(CLIENT_TOKEN);
        }
      }
    }
  } else {
    $app.store().remove(TENANT_OFF_PREFIX + tenant.id);
  }
}

// Realtime: a client that subscribed with a token that is signed out since hears nothing more (its sign-in is
// dropped, as PocketBase drops it when a user's token key changes).
function noteRealtimeToken(e) {
  if (isUser(e.auth)) {
    e.client.set(CLIENT_TOKEN, $security.sha256(bearer(e)));
  } else {
    e.client.unset(CLIENT_TOKEN);
  }
}

function signOutRealtime(hash) {
  const chunks = $app.subscriptionsBroker().chunkedClients(500);
  for (let i = 0; i < chunks.length; i++) {
    for (let j = 0; j < chunks[i].length; j++) {
      const client = chunks[i][j];
      if (client.get(CLIENT_TOKEN) === hash) {
        client.unset(REALTIME_AUTH);
        client.unset(CLIENT_TOKEN);
      }
    }
  }
}

// List one (valid) token until its expiry.
function revoke(app, token) {
  const hash = $security.sha256(token);
  const expires = Number($security.parseUnverifiedJWT(token).exp) * 1000; // verified by the caller
  $app.store().set(REVOKED + hash, expires);
  try {
    app.findFirstRecordByData("revoked_tokens", "hash", hash);
  } catch (_) {
    const row = new Record(app.findCollectionByNameOrId("revoked_tokens"));
    row.set("hash", hash);
    row.set("expires", pbTime(expires));
    try {
      app.save(row);
    } catch (err) {
      // the same token signed out twice at once: the other request listed it (the unique index); else it is an error
      try {
        app.findFirstRecordByData("revoked_tokens", "hash", hash);
      } catch (_) {
        throw err;
      }
    }
  }
  signOutRealtime(hash);
}

// Rows whose token is dead anyway go (a bounded batch per sign-out; the record hook drops them from the store).
function prune(app) {
  const rows = app.findRecordsByFilter("revoked_tokens", "expires <= {:now}", "", PRUNE_BATCH, 0,
    { now: pbTime(Date.now()) });
  for (const row of rows) app.delete(row);
}

// POST /api/r42/sign-out {"token"?, "everywhere"?: bool} -> {"user": <id or "">, "everywhere"}.
// The superuser (the app) names the token to end in the body; a user's own token ends itself (a REST client's sign-out).
// `everywhere` gives the user a new token key: every token of theirs fails from now on. A token that is no longer
// valid (expired, signed out, a changed token key) ends nothing: the app gets {"user": ""}, a user 401. A signed-out
// token cannot sign its user out everywhere.
function signOut(e) {
  const body = e.requestInfo().body || {};
  const everywhere = body.everywhere === true;
  const superuser = e.hasSuperuserAuth();
  let token = "";
  if (superuser) {
    token = typeof body.token === "string" ? body.token : "";
  } else if (isUser(e.auth)) {
    token = bearer(e);
  } else {
    throw new UnauthorizedError(SIGNED_OUT);
  }
  let user = null;
  if (token && token.length <= MAX_TOKEN && !isRevoked(e.app, token)) {
    try {
      user = e.app.findAuthRecordByToken(token, "auth");
    } catch (_) {
      user = null;
    }
  }
  if (!isUser(user)) {
    if (!superuser) throw new UnauthorizedError(SIGNED_OUT);
    return e.json(200, { user: "", everywhere: everywhere });
  }
  if (everywhere) {
    user.refreshTokenKey(); // PocketBase refuses every earlier token and drops the user's realtime sign-ins
    e.app.save(user);
  } else {
    revoke(e.app, token);
  }
  prune(e.app);
  return e.json(200, { user: user.id, everywhere: everywhere });
}

// The chat turn's guard (r42_rules.js turnGuard): "" when the turn's session still holds, else why not:
// "signed_out" (with `token`: it is not this user's valid token, or it was signed out), "changed" (the user is gone,
// or is now in another tenant, or has another role than the session says) or "tenant_disabled".
function sessionProblem(app, tenant, userId, role, token) {
  let user = null;
  if (token) {
    if (token.length > MAX_TOKEN || isRevoked(app, token)) return "signed_out";
    try {
      user = app.findAuthRecordByToken(token, "auth");
    } catch (_) {
      return "signed_out";
    }
    if (!isUser(user) || user.id !== userId) return "signed_out";
  } else {
    try {
      user = app.findRecordById("users", userId);
    } catch (_) {
      return "changed";
    }
  }
  const stored = user.getString("role");
  const current = ROLES.indexOf(stored) >= 0 ? stored : "learner";
  if (user.getString("tenant") !== tenant || (role && current !== role)) return "changed";
  if (isTenantOff(app, tenant)) return "tenant_disabled";
  return "";
}

module.exports = {
  SIGNED_OUT,
  TENANT_OFF,
  isRevoked,
  isTenantOff,
  noteTenantState,
  refuseRevoked,
  noteRealtimeToken,
  remember,
  forget,
  signOut,
  sessionProblem,
};
