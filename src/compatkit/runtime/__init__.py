"""Runtime mode: patchsets applied at import time; nothing in site-packages is written."""
