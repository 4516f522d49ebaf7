"""Ray cluster files for the cloud and on-premises machines, their local twins, and `python -m cluster.check`."""
