-- One account per paid Checkout session: the session id is the business
-- key, and its UNIQUE constraint (the primary key) is what makes two events
-- of one session (checkout.session.completed, then
-- checkout.session.async_payment_succeeded, or a redelivery under a new
-- id) provision once.
CREATE TABLE provisioned_accounts (
    session_id      text PRIMARY KEY,
    workspace_id    text NOT NULL,
    stripe_customer text,
    email           text,
    event_key       text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE provisioned_accounts;
