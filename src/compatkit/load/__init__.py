"""Where patchsets, settings and compatkit's cache come from: the user's folders, trust
checked. Writes only compatkit's own cache and patchset folders, never a target."""
