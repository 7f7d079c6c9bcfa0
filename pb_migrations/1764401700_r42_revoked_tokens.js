/// <reference path="../pb_data/types.d.ts" />
// Issue 44, finding 8: "Afmelden" ends that token. PocketBase can only end every token of a user at once (a new
// `tokenKey`, which "Overal afmelden" uses); one token ends by being listed here until it would have expired on its
// own. Only the SHA-256 of the token is kept (a copy of this table signs nobody in), with its expiry, so a row can
// go once its token is dead anyway (pb_hooks/r42_sessions.js prunes them and keeps the list in memory).
// Superuser only (every rule null): rows are written by the route `/api/r42/sign-out`.

migrate(
  (app) => {
    app.save(
      new Collection({
        type: "base",
        name: "revoked_tokens",
        listRule: null,
        viewRule: null,
        createRule: null,
        updateRule: null,
        deleteRule: null,
        fields: [
          { type: "text", name: "hash", required: true, pattern: "^[0-9a-f]{64}$", min: 64, max: 64 },
          { type: "date", name: "expires", required: true },
          { type: "autodate", name: "created", onCreate: true, onUpdate: false },
        ],
        indexes: [
          "CREATE UNIQUE INDEX idx_revoked_tokens_hash ON revoked_tokens (hash)",
          "CREATE INDEX idx_revoked_tokens_expires ON revoked_tokens (expires)",
        ],
      }),
    );
  },
  (app) => {
    app.delete(app.findCollectionByNameOrId("revoked_tokens"));
  },
);
