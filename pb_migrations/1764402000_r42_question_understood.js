/// <reference path="../pb_data/types.d.ts" />
// Issue 47: a follow-up question is grounded on its meaning in the conversation. The question log keeps the words
// the learner typed (`question`) and, when the question leaned on earlier ones, the question as understood
// ("Wat is partnerpensioen? … En voor de kinderen?"): the knowledge-gaps report groups on it. Empty for a question
// that stands on its own, and in every row written before this migration.

migrate(
  (app) => {
    const log = app.findCollectionByNameOrId("question_log");
    log.fields.add(new TextField({ name: "understood", max: 2000 }));
    app.save(log);
  },
  (app) => {
    const log = app.findCollectionByNameOrId("question_log");
    log.fields.removeByName("understood");
    app.save(log);
  },
);
