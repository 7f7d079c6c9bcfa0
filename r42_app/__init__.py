"""R42: a knowledge-base-grounded learning assistant (Reflex app, PocketBase system of record)."""
