/// <reference path="../pb_data/types.d.ts" />
// Issue 10: PocketBase's own limits, so they hold for every client (not only the app).
// - Rate limits per client IP. Superuser requests (the app's own connection) are never limited by
//   PocketBase, so app traffic from 127.0.0.1 does not throttle itself; the app signs users in with its
//   superuser connection and pb_hooks/ throttles sign-ins per identity for everyone.
// - Batch requests: capped (and refused for non-superusers in pb_hooks/r42.pb.js).
// - Suggestions: a learner may only file a pending, unreviewed suggestion, with a small delta.

const EMPTY = (field) => `(@request.body.${field}:isset = false || @request.body.${field} = "")`;

migrate(
  (app) => {
    const settings = app.settings();
    settings.batch.enabled = true;
    settings.batch.maxRequests = 500; // the app sends at most 400 (kb_store.BATCH_SIZE)
    settings.batch.timeout = 30;
    settings.batch.maxBodySize = 32 * 1024 * 1024; // the app splits its batches at 16 MB (kb_store.BATCH_BYTES)
    settings.rateLimits.enabled = true;
    settings.rateLimits.rules = [
      // direct sign-ins without the app (the app's own go through its superuser connection)
      { label: "*:authWithPassword", audience: "@guest", duration: 60, maxRequests: 20 },
      { label: "_superusers:authWithPassword", audience: "@guest", duration: 60, maxRequests: 120 },
      { label: "*:auth", audience: "@guest", duration: 60, maxRequests: 20 },
      { label: "*:requestPasswordReset", audience: "@guest", duration: 60, maxRequests: 5 },
      // signed-in users writing straight to the REST API (learners can only create suggestions)
      { label: "*:create", audience: "@auth", duration: 10, maxRequests: 60 },
      { label: "/api/batch", audience: "@auth", duration: 10, maxRequests: 5 },
      // anything else anonymous
      { label: "/api/", audience: "@guest", duration: 10, maxRequests: 300 },
    ];
    app.save(settings);

    const suggestions = app.findCollectionByNameOrId("suggestions");
    suggestions.createRule =
      '@request.auth.id != "" && user = @request.auth.id && tenant = @request.auth.tenant && status = "pending"' +
      ` && ${EMPTY("reviewed_by")} && ${EMPTY("reviewed_at")} && ${EMPTY("review_note")}`;
    suggestions.fields.getByName("delta").maxSize = 16000; // a valid delta (3 topics, 5 relations) is < 5 KB
    app.save(suggestions);
  },
  (app) => {
    const settings = app.settings();
    settings.batch.maxRequests = 1000;
    settings.batch.maxBodySize = 64 * 1024 * 1024;
    settings.rateLimits.enabled = false;
    settings.rateLimits.rules = [];
    app.save(settings);
    const suggestions = app.findCollectionByNameOrId("suggestions");
    suggestions.createRule = '@request.auth.id != "" && user = @request.auth.id && tenant = @request.auth.tenant && status = "pending"';
    suggestions.fields.getByName("delta").maxSize = 100000;
    app.save(suggestions);
  },
);
