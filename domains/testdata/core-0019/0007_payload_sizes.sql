-- Payload sizes without the payloads. The operator's database role may not
-- read the payload columns (hookinbox db roles: only members of
-- hookinbox_payload_reader may), yet `inbox show` and `quarantine list` say
-- how large a payload is and whether retention redacted it (NULL). These
-- views run with their owner's privileges and expose the length only.
CREATE VIEW webhook_inbox_payload_size AS
SELECT id, octet_length(payload) AS payload_bytes FROM webhook_inbox;

CREATE VIEW inbox_quarantine_payload_size AS
SELECT id, octet_length(payload) AS payload_bytes FROM inbox_quarantine;

---- create above / drop below ----

DROP VIEW inbox_quarantine_payload_size;
DROP VIEW webhook_inbox_payload_size;
