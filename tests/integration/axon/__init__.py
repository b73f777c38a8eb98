"""Integration tests of mnemo_axon against real Postgres."""
