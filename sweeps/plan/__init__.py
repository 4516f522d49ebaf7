"""The plan: what a sweep will do, decided and checked on the driver before Ray starts (no Ray, no torch).

The options (`options`), the registered sweeps (`registry`) and their search spaces (`space`), the search and the
scheduler by name (`searches`, `schedulers`), each trial's hardware (`resources`), the results folder (`storage`),
the time limit (`budget`), and the plan itself (`sweep_plan`), kept in its folder as data (`record`).
"""
