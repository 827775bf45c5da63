"""`decision-engine batch`: deciding a file of requests, or a folder of documents against a checklist."""
