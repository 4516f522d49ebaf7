"""The search on Ray: the session and the cluster it runs on (`ray_session`, `cluster_probe`), the Tuner and its
trials (`tuner`, `trial`, `epoch_reporter`), faults (`faults`), warm workers (`warm`, `warm_pool`), a fair share of a
shared cluster (`sharing`), and the trials read back from the results folder (`results`).
"""
