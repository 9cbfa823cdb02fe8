"""The public name of Ray's runtime_env plugin, as clusters configure it:

    export RAY_RUNTIME_ENV_PLUGINS='[{"class": "compatkit.ray_plugin.CompatkitPlugin"}]'

The plugin lives in :mod:`compatkit.integrations.ray_plugin`; this name stays so that no
cluster's configuration breaks when the package's layout changes.
"""

from compatkit.integrations.ray_plugin import CompatkitPlugin

__all__ = ["CompatkitPlugin"]
