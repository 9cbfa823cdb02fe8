"""compatkit inside other tools: the pytest plugin and Ray's runtime_env plugin. They call
operations (compatkit.ops), never commands."""
