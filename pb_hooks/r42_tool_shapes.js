// Generated from r42_app/core/tools.py by `python -m r42_app.docsgen`; do not edit (a test compares).
// The input schemas of the tools whose calls PocketBase stores: r42_rules.js checks every writer.
module.exports = {
  "propose_graph_delta": {
    "properties": {
      "reason": {
        "description": "One sentence: why this edit helps.",
        "maxLength": 300,
        "minLength": 1,
        "type": "string"
      },
      "relations": {
        "items": {
          "properties": {
            "source": {
              "maxLength": 80,
              "minLength": 1,
              "type": "string"
            },
            "target": {
              "maxLength": 80,
              "minLength": 1,
              "type": "string"
            },
            "type": {
              "enum": [
                "related_to",
                "depends_on",
                "part_of",
                "executed_by"
              ],
              "type": "string"
            }
          },
          "required": [
            "source",
            "target",
            "type"
          ],
          "type": "object"
        },
        "maxItems": 5,
        "type": "array"
      },
      "topics": {
        "items": {
          "properties": {
            "description": {
              "maxLength": 500,
              "minLength": 1,
              "type": "string"
            },
            "id": {
              "description": "kebab-case id, e.g. wezenpensioen",
              "maxLength": 60,
              "minLength": 1,
              "type": "string"
            },
            "label": {
              "maxLength": 120,
              "minLength": 1,
              "type": "string"
            },
            "type": {
              "enum": [
                "concept",
                "role",
                "process"
              ],
              "type": "string"
            }
          },
          "required": [
            "id",
            "label",
            "type",
            "description"
          ],
          "type": "object"
        },
        "maxItems": 3,
        "type": "array"
      }
    },
    "required": [
      "reason",
      "topics",
      "relations"
    ],
    "type": "object"
  }
};
