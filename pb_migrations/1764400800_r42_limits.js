/// <reference path="../pb_data/types.d.ts" />
// Issue 21: limits that hold.
// - The per-IP sign-in rules count every request that is not a superuser's: with audience "@guest" a
//   learner's Bearer header took a sign-in (or a password reset) past them. PocketBase never rate-limits
//   superuser requests, whatever the audience, so the app (which signs users in over its superuser
//   connection from 127.0.0.1) is not throttled; the other rules stay as they were, because the app
//   also sends requests with users' own tokens (auth-refresh, reads), all from its one address.
// - chat_feedback: one row per user and message (pb_hooks replaces an earlier rating), a message id on
//   every new row, and every text bounded so that one row is small: the question (the user's own text)
//   2,000 characters, the answer (R42's, at most ~1,024 tokens a round) 8,000.

const AUTH_RULES = ["*:authWithPassword", "_superusers:authWithPassword", "*:auth", "*:requestPasswordReset"];

function setAudience(app, audience) {
  const settings = app.settings();
  settings.rateLimits.rules = settings.rateLimits.rules.map((r) => ({
    label: r.label,
    audience: AUTH_RULES.indexOf(r.label) >= 0 ? audience : r.audience,
    duration: r.duration,
    maxRequests: r.maxRequests,
  }));
  app.save(settings);
}

migrate(
  (app) => {
    setAudience(app, "");

    // Earlier duplicates (a writer that skipped the app): keep each user's newest rating of a message.
    const seen = {};
    for (const row of app.findRecordsByFilter("chat_feedback", "message_id != ''", "-created,-id", 0, 0)) {
      const key = row.getString("user") + "/" + row.getString("message_id");
      if (seen[key]) app.delete(row);
      seen[key] = true;
    }
    const feedback = app.findCollectionByNameOrId("chat_feedback");
    const messageId = feedback.fields.getByName("message_id");
    messageId.required = true;
    messageId.pattern = "^[A-Za-z0-9_-]+$";
    feedback.fields.getByName("question").max = 2000;
    feedback.fields.getByName("answer").max = 8000;
    feedback.addIndex("idx_feedback_user_message", true, "user, message_id", "message_id != ''");
    app.save(feedback);
  },
  (app) => {
    setAudience(app, "@guest");
    const feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.removeIndex("idx_feedback_user_message");
    const messageId = feedback.fields.getByName("message_id");
    messageId.required = false;
    messageId.pattern = "";
    feedback.fields.getByName("question").max = 8000;
    feedback.fields.getByName("answer").max = 20000;
    app.save(feedback);
  },
);
