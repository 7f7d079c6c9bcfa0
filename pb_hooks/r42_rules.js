// R42's invariants for every writer, used by r42.pb.js (a plain module: PocketBase loads only *.pb.js
// files as hooks, and handlers cannot see a hook file's top-level names, so they require() this).
// The app checks the same rules first for friendly messages; these are the wall.

const MAX_OPEN_SUGGESTIONS = 20; // services/store/suggestions.py MAX_OPEN_SUGGESTIONS
const SIGNIN_MAX_FAILURES = 5; // per identity ...
const SIGNIN_WINDOW_MS = 60 * 1000; // ... per minute
const FEEDBACK_PER_MINUTE = 20; // ratings per user, whoever writes them (services/store/feedback.py FEEDBACK_PER_MINUTE)
const FEEDBACK_TOO_FAST = "Je hebt veel beoordelingen vlak na elkaar gegeven. Wacht een minuut en probeer het dan opnieuw.";
const DATA_WRITE_DENIED = "Je mag geen aanvullingen op de kennisbank doen; vraag je beheerder."; // chat/turn.py REFUSALS
const CHATBOT_DISABLED = "R42 staat uit voor je organisatie. Je beheerder kan R42 weer aanzetten.";
const NO_TENANT = "Je account hoort bij geen organisatie.";
const OUTBOX_UPSERT = "rag.index.kbarticle.upsert";
const OUTBOX_DELETE = "rag.index.kbarticle.delete";

function parseJSONField(record, name) {
  try {
    return JSON.parse(record.getString(name) || "null");
  } catch (_) {
    return undefined;
  }
}

function isObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function isText(v, max) {
  return typeof v === "string" && v.length <= max;
}

function onlyKeys(v, allowed) {
  return Object.keys(v).every((k) => allowed.indexOf(k) >= 0);
}

// What is wrong with `value` against `schema` ("" when nothing): the part of JSON schema that the tools' input
// models of core/tools.py produce (objects with known keys, lists with a maximum, text with a length or a choice).
// Lengths in characters (code points), as Python counts them.
function schemaProblem(value, schema, where) {
  if (schema.type === "object") {
    const keys = Object.keys(schema.properties || {});
    if (!isObject(value) || !onlyKeys(value, keys)) return (where || "the value") + " must be an object {" + keys.join(", ") + "}";
    for (const key of schema.required || []) {
      if (value[key] === undefined) return (where ? where + "." : "") + key + " is required";
    }
    for (const key of keys) {
      if (value[key] === undefined) continue;
      const problem = schemaProblem(value[key], schema.properties[key], (where ? where + "." : "") + key);
      if (problem) return problem;
    }
    return "";
  }
  if (schema.type === "array") {
    if (!Array.isArray(value)) return where + " must be a list";
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return "at most " + schema.maxItems + " " + where;
    for (let i = 0; i < value.length; i++) {
      const problem = schemaProblem(value[i], schema.items || {}, where + "[" + i + "]");
      if (problem) return problem;
    }
    return "";
  }
  if (schema.type === "string") {
    if (typeof value !== "string") return where + " must be text";
    const length = Array.from(value).length;
    if (schema.minLength !== undefined && length < schema.minLength) return where + " is required";
    if (schema.maxLength !== undefined && length > schema.maxLength) return where + " is longer than " + schema.maxLength + " characters";
    if (schema.enum && schema.enum.indexOf(value) < 0) return where + " must be one of " + schema.enum.join(", ");
    return "";
  }
  return "";
}

// What is wrong with a delta a user files ("" when it has the shape the app writes): a propose_graph_delta call's
// input, checked against the tool's own schema (pb_hooks/r42_tool_shapes.js, generated from core/tools.py).
function deltaProblem(delta) {
  const shape = require(`${__hooks}/r42_tool_shapes.js`).propose_graph_delta;
  const problem = schemaProblem(delta, shape, "");
  if (problem) return problem;
  if (!delta.topics.length && !delta.relations.length) return "the edit adds nothing";
  return "";
}

// core/capabilities.py, mirrored: tests/integration/test_hole_data_write.py checks that both agree on a table of rows.
const CAPABILITIES = ["qa_help", "kb_search", "data_write", "external_tools"];
const DEFAULT_CAPABILITIES = ["qa_help", "kb_search", "data_write"];
const OVERRIDE_VALUES = ["inherit", "grant", "deny"];

function knownCapabilities(ids) {
  return CAPABILITIES.filter((c) => ids.indexOf(c) >= 0);
}

// resolve_capabilities(tenant_default, access, overrides_enabled) on the stored (parsed) JSON: `tenantDefault`
// is tenants.chatbot_default_capabilities (not a list: the default set, as services/store/access.py reads it),
// `access` null or {capability_scopes, overrides} of the user's chatbot_access row. Malformed parts read as empty.
function resolveCapabilities(tenantDefault, access, overridesEnabled) {
  const base = Array.isArray(tenantDefault) ? knownCapabilities(tenantDefault) : DEFAULT_CAPABILITIES.slice();
  if (!access) return base;
  const scopes = Array.isArray(access.capability_scopes)
    ? access.capability_scopes.filter((s) => typeof s === "string") : [];
  const overrides = {};
  if (isObject(access.overrides)) {
    for (const c of CAPABILITIES) {
      if (Object.prototype.hasOwnProperty.call(access.overrides, c) && OVERRIDE_VALUES.indexOf(access.overrides[c]) >= 0) {
        overrides[c] = access.overrides[c];
      }
    }
  }
  const hasOverrides = Object.keys(overrides).length > 0;
  if (!scopes.length && !hasOverrides) return base; // an empty row: the tenant default
  if (!overridesEnabled || !hasOverrides) return knownCapabilities(scopes); // the rollback switch, or a legacy exact list
  return CAPABILITIES.filter((c) => (base.indexOf(c) >= 0 || overrides[c] === "grant") && overrides[c] !== "deny");
}

// The rollback switch of the app (settings.py R42_CAPABILITY_OVERRIDES_ENABLED), from PocketBase's own
// environment: `r42 serve` starts PocketBase with the app's.
function overridesEnabled() {
  const raw = String($os.getenv("R42_CAPABILITY_OVERRIDES_ENABLED") || "").trim().toLowerCase();
  return ["0", "false", "no", "off"].indexOf(raw) < 0;
}

// Why `userId` may not file a suggestion ("" when they may): R42 on for their tenant and `data_write` among
// their effective capabilities, resolved as the app's turn guard does (chat/turn.py _guard).
function dataWriteProblem(app, userId) {
  let user;
  try {
    user = app.findRecordById("users", userId);
  } catch (_) {
    return ""; // no such user: the relation field refuses the row
  }
  const tenantId = user.getString("tenant");
  let tenant;
  try {
    tenant = app.findRecordById("tenants", tenantId);
  } catch (_) {
    return NO_TENANT;
  }
  if (!tenant.getBool("chatbot_enabled")) return CHATBOT_DISABLED;
  let access = null;
  try {
    const row = app.findFirstRecordByFilter("chatbot_access", "tenant = {:t} && user = {:u}", { t: tenantId, u: userId });
    access = { capability_scopes: parseJSONField(row, "capability_scopes"), overrides: parseJSONField(row, "overrides") };
  } catch (_) {
    access = null; // no row: the tenant default
  }
  const effective = resolveCapabilities(parseJSONField(tenant, "chatbot_default_capabilities"), access, overridesEnabled());
  return effective.indexOf("data_write") >= 0 ? "" : DATA_WRITE_DENIED;
}

// A create of a suggestion: the user it names must have `data_write` (everyone, the app's superuser
// connection included: the row names the user it acts for), the delta's shape (non-superusers) and the
// open cap (everyone).
function checkSuggestionCreate(e) {
  const record = e.record;
  const denied = dataWriteProblem(e.app, record.getString("user"));
  if (denied) throw new ForbiddenError(denied);
  if (!e.hasSuperuserAuth()) {
    const problem = deltaProblem(parseJSONField(record, "delta"));
    if (problem) {
      throw new BadRequestError("Invalid suggestion.", {
        delta: new ValidationError("validation_invalid_delta", problem),
      });
    }
  }
  const open = e.app.countRecords("suggestions", $dbx.hashExp({ user: record.getString("user"), status: "pending" }));
  if (open >= MAX_OPEN_SUGGESTIONS) {
    throw new BadRequestError("Je hebt al " + MAX_OPEN_SUGGESTIONS + " open voorstellen; wacht tot een beheerder ze heeft beoordeeld.");
  }
}

// Both ends of a relation exist in its tenant, and it does not point at itself.
function checkRelation(app, record) {
  const tenant = record.getString("tenant");
  const source = record.getString("source");
  const target = record.getString("target");
  if (source === target) {
    throw new BadRequestError("Invalid relation.", {
      target: new ValidationError("validation_self_relation", "a topic cannot relate to itself"),
    });
  }
  const errors = {};
  for (const [field, slug] of [["source", source], ["target", target]]) {
    try {
      app.findFirstRecordByFilter("topics", "tenant = {:t} && slug = {:s}", { t: tenant, s: slug });
    } catch (_) {
      errors[field] = new ValidationError("validation_unknown_topic", "no topic '" + slug + "' in this tenant");
    }
  }
  if (Object.keys(errors).length) throw new BadRequestError("Invalid relation.", errors);
}

// A topic keeps its slug and tenant: relations and the search index refer to them.
function checkTopicUpdate(record) {
  if (record.isNew()) return;
  const before = record.original();
  for (const field of ["slug", "tenant"]) {
    if (before.getString(field) !== record.getString(field)) {
      throw new BadRequestError("Invalid topic.", {
        [field]: new ValidationError("validation_immutable", field + " cannot change; create a new topic instead"),
      });
    }
  }
}

// The outbox row for a topic change, saved by `app` (the caller's transaction). Global topics (no tenant)
// are never indexed.
function writeOutbox(app, record, kind) {
  const tenantId = record.getString("tenant");
  if (!tenantId) return;
  let tenant;
  try {
    tenant = app.findRecordById("tenants", tenantId);
  } catch (_) {
    return; // the tenant itself is being deleted (cascade): nothing of it is indexed any more
  }
  const row = new Record(app.findCollectionByNameOrId("outbox"));
  row.load({
    type: kind,
    status: "pending",
    attempts: 0,
    payload: { tenant: tenantId, tenant_slug: tenant.getString("slug"), topic: record.getString("slug") },
  });
  app.save(row);
}

// Deleting a topic deletes the relations that touch it (in the same transaction), whoever deletes it.
function deleteRelationsOf(app, record) {
  const rows = app.findRecordsByFilter("relations", "tenant = {:t} && (source = {:s} || target = {:s})", "", 0, 0,
    { t: record.getString("tenant"), s: record.getString("slug") });
  for (const row of rows) app.delete(row);
}

// A transaction that reads and then writes, with the write lock taken first. Litestream (R42_REPLICA_URL)
// writes and checkpoints PocketBase's WAL now and then; a transaction that had read kept its snapshot while it
// waited for the write lock, and when it got it after such a write the snapshot was stale: SQLite refused the write
// ("database is locked (517)") once PocketBase's own retries (~7 s) ran out: 3 cost writes in 2,645 turns
// (docs/BENCHMARKS.md). Taking the lock first (a write that changes nothing) waits without a snapshot, as BEGIN
// IMMEDIATE would. Inside a transaction already begun (a batch request) it has read already, so it just runs.
function writeTransaction(app, fn) {
  if (app.isTransactional()) {
    fn(app);
    return;
  }
  app.runInTransaction((tx) => {
    tx.nonconcurrentDB().newQuery("UPDATE _params SET id = id WHERE 0").execute();
    fn(tx);
  });
}

// Runs `write` (the rest of the hook chain) and `after` in one transaction, joining the caller's if there
// is one (a batch request). A plain REST write is not in a transaction by itself.
function inTransaction(e, after) {
  writeTransaction(e.app, (txApp) => {
    e.app = txApp; // the INSERT/UPDATE/DELETE further down the chain uses the transaction
    after.before && after.before(txApp);
    e.next();
    after.after && after.after(txApp);
  });
}

// Counts one attempt under `key` in a fixed window: 0 when it is within `max` (counted), else the seconds
// until the window ends (not counted). Under the store's lock, so parallel attempts cannot slip past.
function takeFromWindow(key, max, windowMs) {
  const now = Date.now();
  let retryAfter = 0;
  $app.store().setFunc(key, (old) => {
    const s = old ? JSON.parse(old) : { n: 0, first: now };
    if (now - s.first > windowMs) {
      s.n = 0;
      s.first = now;
    }
    if (s.n >= max) retryAfter = Math.max(1, Math.ceil((s.first + windowMs - now) / 1000));
    else s.n++;
    return JSON.stringify(s);
  });
  return retryAfter;
}

function tooMany(e, retryAfter, message) {
  e.requestEvent.response.header().set("Retry-After", String(retryAfter));
  throw new TooManyRequestsError(message);
}

// Per-identity sign-in throttle: SIGNIN_MAX_FAILURES attempts a minute (a success resets).
// Issue 48: a tenant that switched passwords off for its single sign-on domains (`tenant_sso.passwords` false) has
// its people of those domains sign in through their organisation only, whoever asks (the app, a REST client).
// Only people of that tenant: a domain setting never locks out a person of another tenant.
const SSO_ONLY = "Je organisatie laat je aanmelden via haar eigen inlogpagina, niet met een wachtwoord.";

function refusePasswordOfSsoDomain(e) {
  const identity = String(e.identity || "").trim().toLowerCase();
  const at = identity.lastIndexOf("@");
  if (at < 1 || !e.record) return;
  const domain = identity.slice(at + 1);
  const rows = $app.findRecordsByFilter("tenant_sso", "tenant = {:t} && passwords = false", "", 1, 0,
    { t: e.record.getString("tenant") });
  for (const row of rows) {
    const domains = JSON.parse(row.getString("domains") || "[]");
    if (Array.isArray(domains) && domains.indexOf(domain) >= 0) throw new ForbiddenError(SSO_ONLY);
  }
}

function throttleSignIn(e) {
  refusePasswordOfSsoDomain(e);
  const key = "r42:signin:" + String(e.identity || "").trim().toLowerCase();
  const retryAfter = takeFromWindow(key, SIGNIN_MAX_FAILURES, SIGNIN_WINDOW_MS);
  if (retryAfter) tooMany(e, retryAfter, "Te veel pogingen, probeer het over een minuut opnieuw.");
  e.next(); // a wrong password throws here; the attempt stays counted
  $app.store().remove(key);
}

// Ratings: FEEDBACK_PER_MINUTE creates a minute per user, whoever writes them (the app rates for a user
// over its superuser connection, so the row's user counts; a user token counts as its own user).
// The schema caps characters; an emoji is 4 bytes, so the row's stored size is capped too.
const FEEDBACK_MAX_BYTES = 24000; // services/store/feedback.py cuts its texts to fit

function utf8Bytes(s) {
  let n = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return n;
}

function throttleFeedback(e) {
  const r = e.record;
  const size = utf8Bytes(r.getString("question")) + utf8Bytes(r.getString("answer")) +
    utf8Bytes(r.getString("citations"));
  if (size > FEEDBACK_MAX_BYTES) {
    throw new BadRequestError("Deze beoordeling is te groot om op te slaan.");
  }
  const user = e.hasSuperuserAuth() ? e.record.getString("user") : (e.auth ? e.auth.id : "");
  if (!user) return; // a guest: the create rule refuses
  const retryAfter = takeFromWindow("r42:feedback:" + user, FEEDBACK_PER_MINUTE, 60 * 1000);
  if (retryAfter) tooMany(e, retryAfter, FEEDBACK_TOO_FAST);
}

// The citations of a rating (issue 44, finding 6): the feedback page makes its source chips of them, so a writer
// may only store citations of the shape R42 makes, each naming a topic of their own tenant: at most
// FEEDBACK_CITATIONS objects {slug, label, ref?, anchor?}. The app's superuser connection is the one writer let
// through; it stores only what passes the same check (services/store/feedback.py, core/chat_view.py valid_citation).
const FEEDBACK_CITATIONS = 10; // services/store/feedback.py CITATIONS
const CITATION_SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/; // core/kb.py SLUG_RE, at most MAX_SLUG (80) characters
const CITATION_ANCHOR = /^p-[0-9a-f]{10}(?:-[0-9]{1,4})?$/; // core/passages.py ANCHOR_RE
const CITATION_LABEL_MAX = 200; // core/chat_view.py MAX_CITATION_LABEL (characters)
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

// What is wrong with a rating's citations ("" when nothing is); `tenant` is the writer's own tenant.
function citationsProblem(app, tenant, citations) {
  if (citations === null) return ""; // none given
  if (!Array.isArray(citations)) return "citations must be a list";
  if (citations.length > FEEDBACK_CITATIONS) return "at most " + FEEDBACK_CITATIONS + " citations";
  for (let i = 0; i < citations.length; i++) {
    const c = citations[i];
    const where = "citations[" + i + "]";
    if (!isObject(c) || !onlyKeys(c, ["ref", "slug", "label", "anchor"])) {
      return where + " must be {slug, label, ref, anchor}";
    }
    if (typeof c.slug !== "string" || c.slug.length > 80 || !CITATION_SLUG.test(c.slug)) {
      return where + ".slug must be a topic id (lower-case letters and digits, joined by hyphens)";
    }
    if (typeof c.label !== "string" || !c.label.trim() || Array.from(c.label).length > CITATION_LABEL_MAX ||
        CONTROL_CHARACTER.test(c.label)) {
      return where + ".label must be plain text of 1 to " + CITATION_LABEL_MAX + " characters";
    }
    if (c.anchor !== undefined && c.anchor !== "" && !(typeof c.anchor === "string" && CITATION_ANCHOR.test(c.anchor))) {
      return where + ".anchor must be a passage anchor (p- and ten hex digits)";
    }
    if (c.ref !== undefined && !(Number.isInteger(c.ref) && c.ref >= 0 && c.ref <= 9999)) {
      return where + ".ref must be a whole number";
    }
    try {
      app.findFirstRecordByFilter("topics", "tenant = {:t} && slug = {:s}", { t: tenant, s: c.slug });
    } catch (_) {
      return where + ".slug: no topic '" + c.slug + "' in your organisation";
    }
  }
  return "";
}

function checkFeedbackCitations(e) {
  if (e.hasSuperuserAuth()) return;
  // the writer's own tenant: a row naming another tenant is refused by the create rule, and the answer here must
  // not tell which topics another tenant has
  const tenant = e.auth ? e.auth.getString("tenant") : "";
  if (!tenant) return; // a guest, or a user of no tenant: the create rule refuses
  const problem = citationsProblem(e.app, tenant, parseJSONField(e.record, "citations"));
  if (problem) {
    throw new BadRequestError("Invalid rating.", {
      citations: new ValidationError("validation_invalid_citations", problem),
    });
  }
}

// One rating per user and message: the ones before it go (in the caller's transaction, so a refused new
// rating leaves the old one in place).
function deleteOldRatings(app, record) {
  const rows = app.findRecordsByFilter("chat_feedback", "user = {:u} && message_id = {:m}", "", 0, 0,
    { u: record.getString("user"), m: record.getString("message_id") });
  for (const row of rows) {
    if (row.id !== record.id) app.delete(row);
  }
}

// POST /api/r42/outbox/claim {worker, types: [...], limit, lease_seconds, tenant?, now?} -> {items: [rows]}
const CLAIM_MAX_ROWS = 1000;
const CLAIM_MAX_LEASE_S = 3600;
const CLAIM_MAX_HELD = 20000;
function pbTime(ms) {
  return new Date(ms).toISOString().replace("T", " ");
}
function claimOutbox(e) {
  const body = e.requestInfo().body || {};
  const worker = String(body.worker || "").slice(0, 120);
  const types = Array.isArray(body.types) ? body.types.filter((t) => typeof t === "string" && t) : [];
  const limit = Math.floor(Number(body.limit));
  const lease = Math.floor(Number(body.lease_seconds));
  if (!worker || types.length === 0 || types.length > 10 || !(limit >= 1 && limit <= CLAIM_MAX_ROWS)
      || !(lease >= 1 && lease <= CLAIM_MAX_LEASE_S)) {
    throw new BadRequestError(`Need worker, 1-10 types, limit 1-${CLAIM_MAX_ROWS} and lease_seconds 1-${CLAIM_MAX_LEASE_S}.`);
  }
  // `now` lets a caller with its own clock (the tests' fake clocks) decide what is due
  const nowMs = body.now ? Date.parse(String(body.now).replace(" ", "T")) : Date.now();
  if (!Number.isFinite(nowMs)) throw new BadRequestError("now must be a date like 2026-12-01 12:00:00.000Z.");
  const params = { now: pbTime(nowMs) };
  const typeFilter = types.map((t, i) => { params["t" + i] = t; return `type = {:t${i}}`; }).join(" || ");
  let filter = `(status = "pending" || status = "failed") && (${typeFilter})`
    + ` && (available_at = "" || available_at <= {:now}) && (lease_until = "" || lease_until <= {:now})`;
  if (body.tenant) {
    params.tenant = String(body.tenant);
    filter += " && payload.tenant = {:tenant}";
  }
  const until = pbTime(nowMs + lease * 1000);
  const claimed = [];
  // A topic whose row another worker holds is left alone until that lease ends: two workers indexing
  // one topic at once could finish in the wrong order and leave an old version (or a deleted topic).
  const topicKey = (row) => {
    const payload = parseJSONField(row, "payload");
    return payload && payload.topic ? `${payload.tenant}/${payload.topic}` : "";
  };
  writeTransaction(e.app, (txApp) => {
    const busy = new Set();
    const held = txApp.findRecordsByFilter("outbox", `(status = "pending" || status = "failed") && (${typeFilter})`
      + " && lease_until > {:now} && claimed_by != {:worker}", "", CLAIM_MAX_HELD, 0, Object.assign({}, params, { worker }));
    for (const row of held) {
      const key = topicKey(row);
      if (key) busy.add(key);
    }
    const rows = txApp.findRecordsByFilter("outbox", filter, "created,id", limit + busy.size, 0, params);
    for (const row of rows) {
      if (claimed.length >= limit) break;
      const key = topicKey(row);
      if (key && busy.has(key)) continue;
      row.set("claimed_by", worker);
      row.set("lease_until", until);
      txApp.save(row);
      claimed.push(row);
    }
  });
  return e.json(200, { items: claimed, lease_until: until });
}

// The chat turn's guard reads in one request (issue 26): the tenant (switch, default capabilities, credit),
// the user's chatbot_access row and whether a quiz of theirs is open at `now`. Three REST calls a turn
// were a fifth of a turn's CPU under load, most of it in the app's HTTP client. With the session's `role` and
// `token` (issue 44) it also answers 401 when that token was signed out or the user has another tenant or role now,
// so a turn never acts on a session its cache still holds (a user moved to another tenant got the old one's answers).
//
// guardOne: one turn's guard reads: the tenant row (from `tenants`, kept in `cache` for the other checks of a batch), the
// user's access row and whether a quiz of theirs is open at nowMs. null when there is no such tenant.
function guardOne(app, tenant, user, nowMs, cache) {
  let tenantRow = cache ? cache[tenant] : undefined;
  if (tenantRow === undefined) {
    try {
      tenantRow = app.findRecordById("tenants", tenant);
    } catch (err) {
      tenantRow = null;
    }
    if (cache) cache[tenant] = tenantRow;
  }
  if (tenantRow === null) {
    return null;
  }
  const first = (collection, filter, params) => {
    const rows = app.findRecordsByFilter(collection, filter, "", 1, 0, params);
    return rows.length ? rows[0] : null;
  };
  const access = first("chatbot_access", "tenant = {:t} && user = {:u}", { t: tenant, u: user });
  const quiz = first("quiz_sessions", "user = {:u} && active = true && expires > {:now}",
    { u: user, now: pbTime(nowMs) });
  return { tenant: tenantRow, access: access, quiz_active: quiz !== null };
}

function guardArgs(raw) {
  const body = raw || {};
  const tenant = String(body.tenant || "");
  const user = String(body.user || "");
  const nowMs = Date.parse(String(body.now || "").replace(" ", "T"));
  if (!tenant || !user || !Number.isFinite(nowMs)) {
    return null;
  }
  // the session the turn acts for (issue 44): its role and token, checked against the user as they are now
  const role = typeof body.role === "string" ? body.role : "";
  const token = typeof body.token === "string" ? body.token : "";
  return { tenant, user, nowMs, role, token };
}

// Why the turn's session no longer holds ("" when it does): its token was signed out, or the user moved to another
// tenant or role since the app checked the token (r42_sessions.js sessionProblem). The app refuses the turn (401).
function guardSession(app, args) {
  return require(`${__hooks}/r42_sessions.js`).sessionProblem(app, args.tenant, args.user, args.role, args.token);
}

function turnGuard(e) {
  const args = guardArgs(e.requestInfo().body);
  if (!args) {
    throw new BadRequestError("Need tenant, user and now (a date like 2026-12-01 12:00:00.000Z).");
  }
  const found = guardOne(e.app, args.tenant, args.user, args.nowMs, null);
  if (found === null) {
    throw new NotFoundError("No such tenant.");
  }
  const problem = guardSession(e.app, args);
  if (problem) {
    return e.json(401, { status: 401, message: "The turn's session no longer holds: " + problem + ".",
      data: { reason: problem } });
  }
  return e.json(200, found);
}

// The guards of turns that arrived together, in one request (issue 26): {"checks": [{tenant, user, now}, ...]}
// answers {"results": [...]} in the same order, each as turnGuard's answer or {"error": status, "message"}.
// Every read is made now, after each turn asked: as fresh as a request of its own.
const MAX_GUARDS = 200;

function turnGuards(e) {
  const checks = (e.requestInfo().body || {}).checks;
  if (!Array.isArray(checks) || checks.length === 0 || checks.length > MAX_GUARDS) {
    throw new BadRequestError(`Need checks: a list of 1 to ${MAX_GUARDS} {tenant, user, now}.`);
  }
  const cache = {};
  const results = checks.map((check) => {
    const args = guardArgs(check);
    if (!args) {
      return { error: 400, message: "Need tenant, user and now (a date like 2026-12-01 12:00:00.000Z)." };
    }
    try {
      const found = guardOne(e.app, args.tenant, args.user, args.nowMs, cache);
      if (!found) return { error: 404, message: "No such tenant." };
      const problem = guardSession(e.app, args);
      return problem ? { error: 401, reason: problem, message: "The turn's session no longer holds: " + problem + "." }
        : found;
    } catch (err) {
      return { error: 500, message: String((err && err.message) || err) };
    }
  });
  return e.json(200, { results: results });
}

// API tokens checked together (issue 26; services/store/auth.py `checks`): {"tokens": [token, ...]} answers
// {"results": [...]} in the same order, each {"user": <the user's record, email included>, "tenant": <its tenant
// or null>} or {"error": 401}. The signature, type (auth), expiry and the user's token key are checked by
// PocketBase itself (findAuthRecordByToken), as when the token is sent with a request of its own: a changed
// password, a deleted user or a signed-out token (r42_sessions.js) fails at once. 150 learners asking their first question together were 150 requests.
const MAX_TOKENS = 200;

function tokenChecks(e) {
  const tokens = (e.requestInfo().body || {}).tokens;
  if (!Array.isArray(tokens) || tokens.length === 0 || tokens.length > MAX_TOKENS) {
    throw new BadRequestError(`Need tokens: a list of 1 to ${MAX_TOKENS} tokens.`);
  }
  const tenants = {};
  const results = tokens.map((token) => {
    if (typeof token !== "string" || !token || token.length > 4096) {
      return { error: 401 };
    }
    let user;
    try {
      user = e.app.findAuthRecordByToken(token, "auth");
    } catch (err) {
      return { error: 401 };
    }
    if (!user || user.collection().name !== "users" || require(`${__hooks}/r42_sessions.js`).isRevoked(e.app, token)) {
      return { error: 401 }; // not a user's token, or signed out ("Afmelden", issue 44)
    }
    user.ignoreEmailVisibility(true);  // the owner of the token sees their own email, as before
    const tenantId = user.getString("tenant");
    let tenant = tenants[tenantId];
    if (tenant === undefined) {
      try {
        tenant = tenantId ? e.app.findRecordById("tenants", tenantId) : null;
      } catch (err) {
        tenant = null;
      }
      tenants[tenantId] = tenant;
    }
    return { user: user, tenant: tenant };
  });
  return e.json(200, { results: results });
}

// A chat turn's AI cost events written at once (issue 26; services/store/costs.py CostRecorder.publish), in one
// transaction, as the outbox's cost persister writes them (services/outbox/costs.py): each event under its own
// id (an id already there is skipped: nothing is written or debited twice), added to its day's rollup, and its
// credits debited from its tenant unless the plan is unlimited. An event of a user deleted since is kept without
// the user. Body: {"day": "YYYY-MM-DD", "events": [{"event": {...}, "rollup": "<rollup id>", "rollup_without_user":
// "<the id for the same event without its user>"}, ...]}.
// Anything wrong fails the whole request (nothing is written) and the app puts the events in the outbox instead.
// Outbox row, claim, persister and done-mark were six writes a turn for PocketBase; this is three.
const MAX_COST_EVENTS = 400;
const ROLLUP_SUMS = ["input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens", "cost_usd", "credits"];

function recordCosts(e) {
  const body = e.requestInfo().body || {};
  const items = body.events;
  const day = String(body.day || "");
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) {
    throw new BadRequestError("Need day: the UTC day, like 2026-12-03.");
  }
  if (!Array.isArray(items) || items.length === 0 || items.length > MAX_COST_EVENTS) {
    throw new BadRequestError(`Need events: a list of 1 to ${MAX_COST_EVENTS} {event, rollup}.`);
  }
  let written = 0;
  let duplicates = 0;
  writeTransaction(e.app, (tx) => {
    const eventsCollection = tx.findCollectionByNameOrId("ai_cost_events");
    const dailyCollection = tx.findCollectionByNameOrId("ai_cost_daily");
    const tenants = {};
    const users = {};
    const rollups = {};
    const debited = {};
    const seen = {};
    const found = (collection, id) => {
      try {
        return tx.findRecordById(collection, id);
      } catch (err) {
        return null;
      }
    };
    for (const item of items) {
      const ev = (item && item.event) || {};
      const id = String(ev.id || "");
      if (!id || !(item && item.rollup) || typeof ev.tenant !== "string" || !ev.tenant) {
        throw new BadRequestError("Each event needs its id, tenant and rollup id.");
      }
      if (seen[id] || found("ai_cost_events", id)) {
        duplicates++;
        continue;
      }
      seen[id] = true;
      let user = String(ev.user || "");
      let rollupId = String((item && item.rollup) || "");
      if (user) {
        if (users[user] === undefined) users[user] = found("users", user) !== null;
        if (!users[user]) {
          user = "";
          rollupId = String(item.rollup_without_user || "");
        }
      }
      if (!rollupId) {
        throw new BadRequestError("An event of a user deleted since needs rollup_without_user.");
      }
      const record = new Record(eventsCollection);
      record.set("id", id);
      for (const name of ["tenant", "turn_id", "capability", "source", "model"]) record.set(name, ev[name] || "");
      for (const name of ROLLUP_SUMS) record.set(name, Number(ev[name]) || 0);
      record.set("user", user);
      tx.save(record);
      written++;
      let rollup = rollups[rollupId];
      if (rollup === undefined) {
        rollup = found("ai_cost_daily", rollupId);
        if (rollup === null) {
          rollup = new Record(dailyCollection);
          rollup.set("id", rollupId);
          rollup.set("tenant", ev.tenant);
          rollup.set("day", day);
          rollup.set("user", user);
          rollup.set("source", ev.source || "");
          rollup.set("model", ev.model || "");
        }
        rollups[rollupId] = rollup;
      }
      rollup.set("events", rollup.getInt("events") + 1);
      for (const name of ROLLUP_SUMS) rollup.set(name, rollup.getFloat(name) + (Number(ev[name]) || 0));
      let tenant = tenants[ev.tenant];
      if (tenant === undefined) {
        tenant = found("tenants", ev.tenant);
        if (tenant === null) throw new BadRequestError(`No tenant ${ev.tenant}.`);
        tenants[ev.tenant] = tenant;
      }
      const credits = Number(ev.credits) || 0;
      if (!tenant.getBool("credits_unlimited") && credits > 0) {
        tenant.set("credits", tenant.getFloat("credits") - credits);
        debited[ev.tenant] = true;
      }
    }
    for (const id in rollups) tx.save(rollups[id]);
    for (const id in debited) tx.save(tenants[id]);
  });
  return e.json(200, { written: written, duplicates: duplicates });
}

// -- The privacy rule (issue 44, findings 4 and 5; docs/SECURITY.md) -----------------------------------------
// Admins see what was asked and rated, never who, unless the learner signed that rating. chat_feedback.user is a
// hidden text field (pb_migrations/1764401500_r42_privacy.js): PocketBase drops it from a user token's body (a body
// naming someone else rates as the token's own user), so the rater is set here from the token.
function assignRater(e) {
  if (e.hasSuperuserAuth()) return; // the app names the rater (services/store/feedback.py)
  e.record.set("user", e.auth ? e.auth.id : "");
}

// A rating is signed only by its own rater, whoever writes it.
function checkSigner(record) {
  const signer = record.getString("signer");
  if (signer && signer !== record.getString("user")) {
    throw new BadRequestError("Invalid rating.", {
      signer: new ValidationError("validation_signer", "only the rater can sign a rating"),
    });
  }
}

// A deleted user's ratings go with them (the relation's cascade did this before the user field became text).
function deleteRatingsOf(app, user) {
  const rows = app.findRecordsByFilter("chat_feedback", "user = {:u}", "", 0, 0, { u: user.id });
  for (const row of rows) app.delete(row);
}

// POST /api/r42/mentions {tenant, needles: [...], targets: [{collection, fields: [...], tenant: bool}]}
//   -> {found: {collection: [ids]}}
// The rows that contain any needle in any of the named fields (SQLite LIKE: ASCII letters in any case), within the
// tenant where the collection has one. `r42 user forget` asks here, in a request body, so that a person's e-mail
// address and name never appear in a URL, where PocketBase's request log would keep them.
const MENTION_NEEDLES = 40;
const MENTION_TARGETS = 60;
function findMentions(e) {
  const body = e.requestInfo().body || {};
  const tenant = String(body.tenant || "");
  const needles = Array.isArray(body.needles) ? body.needles.filter((n) => typeof n === "string" && n.length >= 3) : [];
  const targets = Array.isArray(body.targets) ? body.targets : [];
  if (!tenant || needles.length === 0 || needles.length > MENTION_NEEDLES || targets.length > MENTION_TARGETS) {
    throw new BadRequestError(`Need a tenant, 1-${MENTION_NEEDLES} needles of 3 or more characters and at most ${MENTION_TARGETS} targets.`);
  }
  const params = { t: tenant };
  needles.forEach((n, i) => { params["n" + i] = n; });
  const found = {};
  for (const target of targets) {
    const fields = Array.isArray(target.fields) ? target.fields.filter((f) => /^[A-Za-z0-9_]+$/.test(f)) : [];
    if (!target.collection || fields.length === 0) continue;
    const any = [];
    for (const f of fields) needles.forEach((_, i) => any.push(`${f} ~ {:n${i}}`));
    const filter = (target.tenant ? "tenant = {:t} && " : "") + "(" + any.join(" || ") + ")";
    const rows = e.app.findRecordsByFilter(String(target.collection), filter, "", 0, 0, params);
    if (rows.length) found[target.collection] = rows.map((r) => r.id);
  }
  return e.json(200, { found: found });
}

// POST /api/r42/compact {needles: [...]} -> {logs_deleted}
// After a forget: PocketBase's request log rows that name the person go (their URLs held filters with the e-mail
// address), and both databases are rebuilt (VACUUM) and their write-ahead logs emptied, so the deleted and
// rewritten rows leave no copy in free pages, in the WAL, or in a backup made afterwards. PocketBase writes its
// request log in batches every few seconds: the route waits for the batch under way first.
const LOG_BATCH_WAIT_MS = 3500;
function compact(e) {
  const body = e.requestInfo().body || {};
  const needles = Array.isArray(body.needles) ? body.needles.filter((n) => typeof n === "string" && n.length >= 3) : [];
  if (needles.length > MENTION_NEEDLES) throw new BadRequestError(`At most ${MENTION_NEEDLES} needles.`);
  if (needles.length) sleep(LOG_BATCH_WAIT_MS);
  let deleted = 0;
  for (const n of needles) {
    const like = "%" + n.replace(/[\\%_]/g, (c) => "\\" + c) + "%";
    const result = e.app.auxNonconcurrentDB()
      .newQuery("DELETE FROM _logs WHERE message LIKE {:n} ESCAPE '\\' OR data LIKE {:n} ESCAPE '\\'")
      .bind({ n: like })
      .execute();
    deleted += result.rowsAffected();
  }
  e.app.auxVacuum();
  e.app.vacuum();
  e.app.auxNonconcurrentDB().newQuery("PRAGMA wal_checkpoint(TRUNCATE)").execute();
  e.app.nonconcurrentDB().newQuery("PRAGMA wal_checkpoint(TRUNCATE)").execute();
  return e.json(200, { logs_deleted: deleted });
}

module.exports = {
  writeTransaction,
  recordCosts,
  tokenChecks,
  turnGuard,
  turnGuards,
  claimOutbox,
  OUTBOX_UPSERT,
  OUTBOX_DELETE,
  checkSuggestionCreate,
  resolveCapabilities,
  throttleFeedback,
  checkFeedbackCitations,
  deleteOldRatings,
  checkRelation,
  checkTopicUpdate,
  writeOutbox,
  deleteRelationsOf,
  inTransaction,
  throttleSignIn,
  assignRater,
  checkSigner,
  deleteRatingsOf,
  findMentions,
  compact,
};
