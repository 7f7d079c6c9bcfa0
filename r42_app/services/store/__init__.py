"""PocketBase-backed stores: every read and write of stored data goes through one of these."""
