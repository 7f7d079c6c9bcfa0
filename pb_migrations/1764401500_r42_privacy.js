/// <reference path="../pb_data/types.d.ts" />
// Issue 44, findings 4 and 5: the privacy rule. Admins see what was asked and how it was rated, never who, unless
// the learner chose to sign that one rating (docs/SECURITY.md, "The privacy rule").
//
// chat_feedback.user was a relation to users, readable by the tenant's admins. Hiding a relation is not enough:
// PocketBase still expands a hidden relation (`?expand=user`) and its back-relation (`users?expand=
// chat_feedback_via_user`) for an admin's token, so it becomes a hidden *text* field holding the user's id. Only
// the app's superuser connection reads it (one rating per user and message, the per-user rate, `r42 user forget`);
// an admin's token can neither read it, filter or sort on it, nor expand it either way. PocketBase drops a hidden
// field from a user token's body (and a rule naming one fails for a user's token), so pb_hooks sets it from the
// token: a user rates only as themselves. A deleted user's ratings are deleted by pb_hooks, as the relation's cascade
// did.
//
// chat_feedback.signer: the rater, only when they chose "Zet mijn naam erbij" (empty otherwise); always the row's own
// user (pb_hooks, for every writer). Admins read it.
//
// question_log: the tenant's admins no longer read the raw log through the REST API (every rule null: only the app's
// superuser connection reads and writes it). Without a user key its rows still came in the order and at the second
// they were asked, so one question that names its asker, or one signed rating, pointed at the questions asked just
// before and after it. Admins see what was asked through the knowledge-gaps report (/admin/gaps), grouped, with no
// count of learners below 3 (core/gaps.py MIN_ASKERS_SHOWN).

const RULE = '@request.auth.id != "" && tenant = @request.auth.tenant';

migrate(
  (app) => {
    const users = app.findCollectionByNameOrId("users");
    let feedback = app.findCollectionByNameOrId("chat_feedback");
    // the rule named the relation: until the text field is there, only the hook's check holds
    feedback.createRule = RULE;
    feedback.removeIndex("idx_feedback_user_message");
    feedback.fields.add(new TextField({ name: "rater_moving", max: 64 }));
    app.save(feedback);
    app.db().newQuery("UPDATE chat_feedback SET rater_moving = [[user]]").execute();

    feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.fields.removeByName("user");
    app.save(feedback);

    feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.fields.add(new TextField({ name: "user", required: true, pattern: "^[a-z0-9]+$", max: 64, hidden: true }));
    feedback.fields.add(new RelationField({ name: "signer", collectionId: users.id, maxSelect: 1, cascadeDelete: false }));
    app.save(feedback);
    app.db().newQuery("UPDATE chat_feedback SET [[user]] = rater_moving").execute();

    feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.fields.removeByName("rater_moving");
    feedback.addIndex("idx_feedback_user_message", true, "user, message_id", "message_id != ''");
    // a rule cannot name a hidden field for a user's token (PocketBase refuses the request): the rater is the
    // token's user because pb_hooks sets it so (assignRater), and a signer can only be that user
    feedback.createRule = RULE + ' && (signer = "" || signer = @request.auth.id)';
    app.save(feedback);

    const log = app.findCollectionByNameOrId("question_log");
    log.listRule = null;
    log.viewRule = null;
    app.save(log);
  },
  (app) => {
    const log = app.findCollectionByNameOrId("question_log");
    log.listRule = '@request.auth.id != "" && @request.auth.role = "admin" && tenant = @request.auth.tenant';
    log.viewRule = log.listRule;
    app.save(log);
    const users = app.findCollectionByNameOrId("users");
    let feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.createRule = RULE;
    feedback.removeIndex("idx_feedback_user_message");
    feedback.fields.removeByName("signer");
    feedback.fields.add(new TextField({ name: "rater_moving", max: 64 }));
    app.save(feedback);
    app.db().newQuery("UPDATE chat_feedback SET rater_moving = [[user]]").execute();
    feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.fields.removeByName("user");
    app.save(feedback);
    feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.fields.add(new RelationField({ name: "user", collectionId: users.id, required: true, maxSelect: 1, cascadeDelete: true }));
    app.save(feedback);
    app.db().newQuery("UPDATE chat_feedback SET [[user]] = rater_moving").execute();
    feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.fields.removeByName("rater_moving");
    feedback.addIndex("idx_feedback_user_message", true, "user, message_id", "message_id != ''");
    feedback.createRule = RULE + " && user = @request.auth.id";
    app.save(feedback);
  },
);
