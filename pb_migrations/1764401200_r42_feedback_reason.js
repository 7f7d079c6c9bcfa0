/// <reference path="../pb_data/types.d.ts" />
// Issue 25: a thumbs-down may say what was wrong ("Wat klopte er niet?"), optional, at most 500 characters.
// Only the server writes it (the collection's updateRule stays null): services/store/feedback.py add_reason.

migrate(
  (app) => {
    const feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.fields.add(new TextField({ name: "reason", max: 500 }));
    app.save(feedback);
  },
  (app) => {
    const feedback = app.findCollectionByNameOrId("chat_feedback");
    feedback.fields.removeByName("reason");
    app.save(feedback);
  },
);
