/// <reference path="../pb_data/types.d.ts" />
// Indexes for the retriever's "did this tenant's KB change?" check (newest `updated` per tenant).

migrate(
  (app) => {
    for (const name of ["topics", "relations"]) {
      const collection = app.findCollectionByNameOrId(name);
      collection.indexes.push(`CREATE INDEX idx_${name}_tenant_updated ON ${name} (tenant, updated)`);
      app.save(collection);
    }
  },
  (app) => {
    for (const name of ["topics", "relations"]) {
      const collection = app.findCollectionByNameOrId(name);
      collection.indexes = collection.indexes.filter((idx) => !idx.includes(`idx_${name}_tenant_updated`));
      app.save(collection);
    }
  },
);
