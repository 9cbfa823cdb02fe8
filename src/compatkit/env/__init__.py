"""The target environment: interpreter, site folders, RECORD, files, state, lock, journal,
transactions. Every write to site-packages goes through here."""
