"""An entry point that fails to import: tileops must record it, not drop it or die."""
raise ImportError("tileops_testplugin.broken: this plugin is broken on purpose")
