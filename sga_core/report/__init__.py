"""The read side: turning evaluated run folders into evidence. Each module holds one thing:

- :mod:`.table`: the Results table (one row per run, the Original and Retained rows first),
  readable run names and the best value of each column;
- :mod:`.columns`: the reference rows and the value columns a set of rows has;
- :mod:`.settings`: a run's settings read from its config, and which of them differ;
- :mod:`.collapse`: the rule that flags a destroyed model;
- :mod:`.seeds`: configurations pooled over seeds (mean, sd, 95% interval, n);
- :mod:`.sweeps`: metric versus r (or alpha) with intervals, and the r suggestion;
- :mod:`.export`: the CSV/JSON download;
- :mod:`.uncertainty`: one run's bootstrap intervals, FQ's resolution, two runs compared;
- :mod:`.measurable`: whether the Original and Retained can be told apart on the forget
  set (if not, no forgetting can be measured and nothing is ranked);
- :mod:`.row_stats`: the columns that are not a mean of rows (MIA AUC, PrivLeak,
  perplexity, Model Utility), recomputed per bootstrap resample;
- :mod:`.paper`: the paper's Table 1;
- :mod:`.stats`: the statistics behind them (t intervals, bootstraps, KS steps);
- :mod:`.run_files`: one run's config diff, tokens, per-row values and probes;
- :mod:`.layers`: one run's layer view (the logit lens of its evaluation).

No Streamlit and no HTML here: the pages render what these functions return."""
