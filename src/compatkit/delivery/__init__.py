"""Patched wheels and SBOM documents: release wheels read and proven, new wheels built
(written only through compatkit.atomic)."""
