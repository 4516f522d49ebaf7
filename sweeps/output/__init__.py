"""What a user gets at the end of a sweep: the summary printed and the files written (`summary`), and where the time
went (`timings`).
"""
