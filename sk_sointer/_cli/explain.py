"""``python -m sk_sointer explain``: explain a saved model on the rows of a CSV file."""

import csv
import os
import sys
import warnings

import numpy as np

from ._common import (_FIT_OPTIONS, _Blamed, _InputError, _ModelError, _build_explainer,
                      _defaults, _method, _one_line, _per_row, _random_label,
                      _random_mask_fidelity)


_PROGRESS_ROWS = 50_000


_WRITE_CHUNK = 10_000


def _run_explain(args):
    loading = args.explainer is not None
    if loading:
        given = [option for dest, option in _FIT_OPTIONS if getattr(args, dest) not in (None, [])]
        if given:
            raise _InputError(", ".join(given) + " cannot be used with --explainer, which "
                              "loads an explainer fitted already.")
    else:
        method, cls = _method(args.method)
    _check_repair_options(args)
    for path in (args.out, args.scores, args.reasons, args.save_explainer):
        _check_folder(path)
    model = _load_model(args.model)
    names, X, table = _read_data(args.data, model, args.header, args.model)
    n_rows, n_features = X.shape
    _check_model_fits_data(model, names, n_features, args.data)
    if table and args.baseline not in (None, "mean"):
        raise _InputError(
            f"--baseline {args.baseline} fills numbers only, and {args.data!r} is read as a "
            "table (text or empty cells, or a model that takes a DataFrame), whose left-out "
            "columns take their training mean (numbers) or most frequent value (text): leave "
            "--baseline out."
        )
    black_box = _user_black_box(model, args.model)

    if loading:
        explainer = _load_explainer(args.explainer, black_box, args.device, names,
                                    n_features, args.data)
        rows = None
    else:
        grouped = any(name == "groups" for name, _ in args.param)
        k = _explain_k(method, cls, args.k, n_features, args.data, grouped)
        explainer = _build_explainer(method, cls, args, n_features=n_features, k=k,
                                     baseline=args.baseline, verbose=1)
        rows = _fit_rows(n_rows, args.fit_rows, args.random_state)
    X_fit = X if rows is None else _take(X, rows)

    with warnings.catch_warnings():
        # Column names were checked against the model's above.
        warnings.filterwarnings("ignore", message=".*feature names.*", category=UserWarning)
        if not loading:
            try:
                explainer.fit(X_fit, black_box=black_box)
            except (TypeError, ValueError) as exc:
                raise _InputError(f"could not fit the explainer to {args.model}: "
                                  f"{_one_line(str(exc))}") from None
            if names is not None and not table:
                # As a fit on a frame with these columns sets it: the names are saved
                # with the explainer and shown by inspect (rows of numbers are read as an
                # array).
                explainer.feature_names_in_ = np.asarray(names, dtype=object)
            if args.save_explainer is not None:
                _save_explainer(explainer, args.save_explainer)
        try:
            report = None
            if args.repair:
                explainer.set_params(repair=_repair_of(args))
                report = explainer.repair_masks(X)
                masks = np.asarray(report.masks)
            else:
                masks = np.asarray(explainer.transform(X))
            holds = _holds(explainer, X, masks, args, report)
            by_answer = None if holds is None else _holding_by_answer(explainer, X, holds)
            scores = None if args.scores is None else explainer.explain(X)
            reasons = None if args.reasons is None else explainer.reasons(X, masks)
            fidelity = explainer.score(X_fit)
            fit_counts = masks.sum(axis=1) if rows is None else masks[rows].sum(axis=1)
            if table:
                chance = _random_table_fidelity(explainer, X_fit, fit_counts,
                                                args.random_state)
            else:
                chance = _random_mask_fidelity(black_box, X_fit, fit_counts,
                                               explainer.masker_.baseline_, args.random_state,
                                               target=explainer.output_spec_.target)
        except (TypeError, ValueError) as exc:
            # The model's answers on masked rows are checked as in fit (finite, one row per
            # row, the same width): an answer that fails is bad input, as it is in fit.
            raise _InputError(f"could not explain with {args.model}: {_one_line(str(exc))}"
                              ) from None

    written = masks.astype(np.int8)
    if holds is not None:
        written = np.column_stack([written, holds.astype(np.int8)])
    header = names if names is None or holds is None else [*names, "holds"]
    _write_rows(args.out, header, written, "masks")
    unit = "columns" if table else "features"
    wrote = (f"Wrote {n_rows:,} masks ({_per_row(masks.sum(axis=1), n_features, unit)}) to "
             f"{args.out}")
    if holds is not None:
        wrote += ", with a column 'holds': " + _holding_text(holds, by_answer, table)
        if report is not None:
            wrote += (f" ({report.n_repaired:,} of the {report.n_failed:,} rows that failed "
                      f"the check repaired; {report.queries_per_row:.1f} model queries a row)")
    if args.scores is not None:
        # The shortest text that reads back as the same float32.
        _write_rows(args.scores, names, scores.astype(str), "scores")
        wrote += f" and their scores to {args.scores}"
    if reasons is not None:
        _write_frame(args.reasons, reasons)
        wrote += f"; {len(reasons):,} reasons to {args.reasons}"
    where = f"the {n_rows:,} rows" if loading else f"the {len(X_fit):,} fit rows"
    print(f"{wrote}; fidelity on {where}: {fidelity:.3f} (higher is better; "
          f"{_random_label(fit_counts, unit)}: {chance:.3f}).")
    return 0


def _holding_text(holds, by_answer, table):
    """The rows whose mask keeps the model's answer. On a table, by the model's answer
    first: where one answer is rare, the share over all rows says little of its rows."""
    if by_answer is None:
        return f"the model keeps its answer on {holds.mean():.1%} of the masked rows"
    shares = ", ".join(f"{label} {share:.1%}" for label, share in by_answer.items())
    if table:
        shares = " and ".join(f"{label} {share:.1%}" for label, share in by_answer.items())
        return (f"by the model's answer on the full row, {shares} of the masked rows keep "
                f"it ({holds.mean():.1%} of all rows)")
    return (f"the model keeps its answer on {holds.mean():.1%} of the masked rows (by its "
            f"answer on the full row: {shares})")


def _holds(explainer, X, masks, args, report):
    """Whether the model keeps its answer on each masked row (``--check``, ``--repair``:
    the repair has checked every row already, its ``report`` says), or None."""
    if report is not None:
        return report.holds
    if args.check:
        return explainer.check(X, masks, tol=args.tol).holds
    return None


def _check_repair_options(args):
    """``--repair-max-queries`` sets the repair's budget and ``--tol`` what the check (or the
    repair) keeps: refused without the option they set, which would ignore them."""
    if args.repair_max_queries is not None and not args.repair:
        raise _InputError("--repair-max-queries sets the repair's budget: give --repair too.")
    if args.tol is not None and not (args.repair or args.check):
        raise _InputError("--tol sets how far a regression output may move and be kept, "
                          "for --check or --repair: give one of them too.")


def _repair_of(args):
    """The explainer's ``repair`` for ``--repair``: "model" (the default settings), or a
    :class:`~sk_sointer.RowRepair` with ``--repair-max-queries`` and ``--tol``."""
    if args.repair_max_queries is None and args.tol is None:
        return "model"
    from .._model_judge import RowRepair

    settings = {"max_queries": args.repair_max_queries, "tol": args.tol}
    return RowRepair(**{name: value for name, value in settings.items() if value is not None})


def _holding_by_answer(explainer, X, holds):
    """``evaluate``'s ``rows_holding_by_answer`` of these rows (one query a row more), for a
    model of one categorical output with at most six classes; else None."""
    from ..black_box import model_answers
    from ..metrics._evaluate import _holding_by_answer as by_answer

    black_box = explainer.black_box_
    if black_box.spec.kinds != ("categorical",) or black_box.spec.n_columns > 6:
        return None
    return by_answer(black_box.spec, model_answers(black_box, _model_rows(explainer, X)),
                     holds)


def _model_rows(explainer, X):
    """``X`` as the fitted black box takes it: a table's rows as their cells' codes (the
    black box decodes them into a frame for the model), other rows as they are."""
    codec = getattr(explainer.masker_, "codec", None)
    return X if codec is None else codec.encode(X)


def _random_table_fidelity(explainer, X, counts, seed):
    """The fidelity of random masks keeping as many columns per row as the explanations,
    scored as the explainer's ``score`` is (by the model's answer for a classifier), the
    left-out columns filled as the explainer fills them."""
    from ..metrics import random_masks

    codes = _model_rows(explainer, X)
    masks = random_masks(len(counts), codes.shape[1], counts, random_state=seed)
    # the explainer's own value function: its fill, or its background rows
    scores = explainer._masked_value().agreement(codes, masks, explainer.output_spec_,
                                                 by_answer=True)
    target = explainer.output_spec_.target
    return float(scores.mean() if target is None else scores[target])


def _take(X, rows):
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


def _explain_k(method, cls, k, n_features, data_path, grouped):
    """-k, or the method's default; checked against the width unless k counts groups
    (the estimator checks it against the groups then)."""
    if k is None:
        k = _defaults(cls).get("k")
        if k is not None and k > n_features and not grouped:
            # A default k beyond the data keeps every feature, as the estimator does; said
            # here in one line rather than as the estimator's warning.
            print(f"sk_sointer explain: warning: {method}'s default k={k} is more than the "
                  f"{n_features} columns of {data_path!r}, so every feature is selected; give "
                  "-k to select fewer.", file=sys.stderr)
            k = n_features
    elif k < 1 or (k > n_features and not grouped):
        raise _InputError(f"k should be between 1 and n_features = {n_features}; got {k}.")
    return k


def _fit_rows(n_rows, n_fit, seed):
    """Indices of ``n_fit`` rows drawn at random without replacement, in file order;
    ``None`` for all rows."""
    if n_fit is None or n_fit >= n_rows:
        return None
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=n_fit, replace=False))


def _user_black_box(model, path):
    """The model as a black box whose exceptions surface as :class:`_ModelError`. How it is
    queried (classifier, regressor, torch module, callable) is read from the model itself."""
    from ..black_box import BlackBox, as_black_box

    try:
        adapted = as_black_box(model)
    except (TypeError, ValueError) as exc:
        raise _InputError(f"{path} does not hold a usable model: {exc}") from None
    return BlackBox(_Blamed(adapted.model), kind=adapted.kind, output=adapted.output)


def _save_explainer(explainer, path):
    import sk_sointer

    save = sk_sointer.save
    try:
        save(explainer, path)
    except Exception as exc:  # noqa: BLE001 - the file format's writer has errors of its own
        raise _InputError(
            f"cannot save the explainer to {path!r} ({type(exc).__name__}: "
            f"{_one_line(str(exc))}); leave --save-explainer out to explain without saving it."
        ) from None


def _load_explainer(path, black_box, device, names, n_features, data_path):
    import sk_sointer

    from .._utils import resolve_device

    load = sk_sointer.load
    _check_file(path, "explainer")
    try:
        device = str(resolve_device(device))
    except ValueError as exc:
        raise _InputError(str(exc)) from None
    try:
        explainer = load(path, device=device, black_box=black_box)
    except _ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged or foreign file can fail in any way
        raise _InputError(
            f"cannot load an explainer from {path!r} ({type(exc).__name__}: {exc})."
        ) from None
    expected = getattr(explainer, "n_features_in_", None)
    if expected is not None and expected != n_features:
        raise _InputError(
            f"the explainer in {path!r} was fitted on {expected} features but {data_path!r} "
            f"has {n_features} columns."
        )
    fitted = getattr(explainer, "feature_names_in_", None)
    if fitted is not None and names is not None and list(fitted) != list(names):
        first = next(i for i, (a, b) in enumerate(zip(fitted, names)) if a != b)
        raise _InputError(
            f"the CSV's column names differ from those the explainer in {path!r} was fitted "
            f"on: column {first + 1} is {names[first]!r} in {data_path!r} but "
            f"{fitted[first]!r} in the explainer."
        )
    return explainer


def _check_file(path, what):
    if not os.path.exists(path):
        raise _InputError(f"{what} file {path!r} does not exist.")
    if not os.path.isfile(path):
        raise _InputError(f"{what} path {path!r} is not a file.")


def _check_folder(path):
    """Refuse an output path whose folder is missing before any time goes into fitting."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise _InputError(f"cannot write {path!r}: the folder {folder!r} does not exist.")


def _load_model(path):
    import joblib

    _check_file(path, "model")
    try:
        return joblib.load(path)
    except Exception as exc:  # noqa: BLE001 - unpickling can fail in any way
        raise _InputError(
            f"cannot load a model from {path!r} with joblib ({type(exc).__name__}: {exc})."
        ) from None


def _check_model_fits_data(model, names, n_features, data_path):
    model_names = getattr(model, "feature_names_in_", None)
    if model_names is not None and names is not None:
        model_names = [str(name) for name in model_names]
        missing = [name for name in model_names if name not in names]
        extra = [name for name in names if name not in model_names]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"lacks the model's column{'s' * (len(missing) > 1)} "
                             + _names_text(missing))
            if extra:
                parts.append(("has columns" if len(extra) > 1 else "has a column")
                             + " the model was not fitted on: " + _names_text(extra))
            raise _InputError(
                f"{data_path!r} " + " and ".join(parts) + "; give the CSV file the model's "
                f"{len(model_names)} columns, named as in the model: "
                + _names_text(model_names) + "."
            )
        if model_names != list(names):
            # The model is called with its own column order, so a reordered file would be
            # explained silently wrong.
            first = next(i for i, (a, b) in enumerate(zip(model_names, names)) if a != b)
            raise _InputError(
                f"the CSV's column names differ from the model's feature names: column "
                f"{first + 1} is {names[first]!r} in {data_path!r} but {model_names[first]!r} "
                "in the model; save the CSV file's columns in the model's order: "
                + _names_text(model_names) + "."
            )
    expected = getattr(model, "n_features_in_", None)
    if expected is not None and expected != n_features:
        raise _InputError(
            f"the model expects {expected} features but {data_path!r} has {n_features} "
            f"columns; give the CSV file the model's {expected} columns, in its order."
        )


def _names_text(names, shown=8):
    quoted = [repr(name) for name in names]
    if len(quoted) > shown:
        return ", ".join(quoted[:shown]) + f", ... ({len(quoted)} in all)"
    return ", ".join(quoted)


def _is_number(cell):
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _is_integer_text(cell):
    """Whether a number is written as an integer (``2019``, ``-3``), not ``2019.0`` or ``2e3``."""
    text = cell.strip().lstrip("+-")
    return text.isdigit()


def _is_run(row):
    """Whether ``row``'s numbers are consecutive integers ascending by one (``0,1,...,d-1``,
    ``1,...,d``, ``2019,...,2023``; written as integers or as ``0.0, 1.0, ...``), with two
    numbers at least."""
    values = [float(cell) for cell in row]
    return (len(values) >= 2 and values[0].is_integer()
            and all(b - a == 1 for a, b in zip(values, values[1:])))


def _numeric_header_rule(rows):
    """Why a first row of numbers only is a header, or ``None`` when it reads as data.

    A first row of numbers is column names when it differs in kind from the rows below:

    - its numbers are consecutive integers ascending by one, column after column (what
      pandas writes for unnamed columns, ``0,1,...,d-1``; column numbers ``1,...,d``; years
      ``2019,...,2023``), and no row below is such a run; or
    - its cells (two at least) are all written as integers while every column below holds
      a number written with a fraction or an exponent (``10,20,30`` above measurements).
    """
    first, below = rows[0], rows[1:]
    if not below:
        return None
    if _is_run(first) and not any(_is_run(row) for row in below if _all_numbers(row)):
        return ("its numbers are consecutive integers, column after column, as column "
                "numbers or years are, and no row below is")
    if len(first) >= 2 and all(_is_integer_text(cell) for cell in first):
        fractional = [False] * len(first)
        for row in below:  # stops at the first rows that show every column's kind
            for column, cell in enumerate(row[:len(first)]):
                fractional[column] = fractional[column] or not _is_integer_text(cell)
            if all(fractional):
                return ("its cells are written as integers, while every column below "
                        "holds numbers written with a fraction or an exponent")
    return None


def _all_numbers(row):
    return all(_is_number(cell) for cell in row)


def _csv_rows(path):
    """The CSV file's rows of cells (blank lines left out) and their line numbers."""
    _check_file(path, "data")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            rows, lines = [], []
            for row in reader:
                if not row or all(not cell.strip() for cell in row):
                    continue  # blank lines, such as a trailing one
                rows.append(row)
                lines.append(reader.line_num)
    except UnicodeDecodeError:
        raise _InputError(f"{path!r} is not a UTF-8 text CSV file.") from None
    except csv.Error as exc:
        raise _InputError(f"{path!r} is not a valid CSV file: {exc}.") from None
    if not rows:
        raise _InputError(f"{path!r} is empty.")
    return rows, lines


def _check_widths(path, rows, lines):
    width = len(rows[0])
    for row, line in zip(rows, lines):
        if len(row) != width:
            raise _InputError(
                f"row {line} of {path!r} has {len(row)} cells; expected {width} "
                f"(the width of row {lines[0]})."
            )


class _CellError(_InputError):
    """A cell of a CSV read as numbers that is not a finite number: ``kind`` is "text",
    "empty" (an empty or NaN cell) or "infinite"."""

    def __init__(self, message, kind):
        super().__init__(message)
        self.kind = kind


def _read_csv(path, *, header=None):
    """Read a numeric CSV file; return ``(column names or None, float64 array)``.

    ``header=None`` detects a header: the first row is one when some of its cells are not
    numbers, or when its numbers differ in kind from the rows below
    (:func:`_numeric_header_rule`); a note on stderr says how a row of numbers was read.
    """
    rows, lines = _csv_rows(path)
    if header is None:
        header = not _all_numbers(rows[0])
        if not header:
            # A row of numbers can still be column names (pandas writes 0, 1, 2, ... for
            # a frame without names): the rule is said, so that a wrong guess is seen.
            header = _numbers_are_header(path, rows)
    names = [cell.strip() for cell in rows[0]] if header else None
    width = len(rows[0])
    data, data_lines = (rows[1:], lines[1:]) if header else (rows, lines)
    if not data:
        raise _InputError(f"{path!r} has a header row but no data rows.")
    _check_widths(path, rows, lines)
    try:
        X = np.array(data, dtype=np.float64)
    except ValueError:
        # Slow path: name the first cell that is not a number.
        for row, line in zip(data, data_lines):
            for col, cell in enumerate(row):
                if not _is_number(cell):
                    raise _CellError(
                        f"row {line}, column {_column_label(col, names)} of {path!r} is not a "
                        f"number: {cell!r}.{_separator_hint(width, cell)}",
                        "text" if cell.strip() else "empty",
                    )
        X = np.array([[float(cell) for cell in row] for row in data], dtype=np.float64)
    bad = np.argwhere(~np.isfinite(X))
    if len(bad):
        row, col = bad[0]
        raise _CellError(
            f"row {data_lines[row]}, column {_column_label(col, names)} of {path!r} is "
            f"{X[row, col]}; the explainer needs finite numbers.",
            "empty" if np.isnan(X[row, col]) else "infinite",
        )
    return names, X


def _numbers_are_header(path, rows):
    """Whether a first row of numbers only is a header (:func:`_numeric_header_rule`),
    with a note on stderr saying how it was read."""
    rule = _numeric_header_rule(rows)
    if rule is not None:
        print(f"sk_sointer explain: note: the first row of {path!r} "
              f"({_cells_text(rows[0])}) is read as a header: {rule}; --no-header "
              "reads it as data.", file=sys.stderr)
        return True
    print(f"sk_sointer explain: note: the first row of {path!r} "
          f"({_cells_text(rows[0])}) is read as data: it holds numbers only, "
          "like the rows below; --header reads it as column names.", file=sys.stderr)
    return False


# -- tables: a CSV file read as pandas reads it, for a model that takes a DataFrame ---------

def _read_data(path, model, header, model_path):
    """``(column names or None, rows, table)``: the CSV file as a DataFrame (``table``) when
    the model takes one (:func:`_takes_frames`), or when the file holds text or empty cells
    and the model answers on them; as numbers otherwise."""
    if _takes_frames(model):
        return (*_read_table(path, header, model), True)
    try:
        names, X = _read_csv(path, header=header)
    except _CellError as exc:
        if exc.kind == "infinite":
            raise
        names, frame = _read_table(path, header, model)
        refusal = _refuses_frames(model, frame)
        if refusal is None:
            return names, frame, True
        what = "text" if exc.kind == "text" else "empty cells"
        raise _InputError(
            f"{exc} The model in {model_path!r} does not take a table with {what} ({refusal}): "
            "save the model with its encoder (a Pipeline with a ColumnTransformer that "
            "imputes and encodes the table's columns), or give a CSV file of numbers only."
        ) from None
    return names, X, False


def _takes_frames(model):
    """Whether the model takes a DataFrame: a scikit-learn Pipeline or ColumnTransformer,
    or an estimator fitted on one (it has ``feature_names_in_``)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    return (isinstance(model, (Pipeline, ColumnTransformer))
            or getattr(model, "feature_names_in_", None) is not None)


def _refuses_frames(model, frame):
    """Why the model cannot answer on the first rows of ``frame`` and its first rows with
    empty or text cells (its error, in one line), or None when it answers."""
    import pandas as pd

    call = next((getattr(model, name) for name in ("predict_proba", "predict")
                 if callable(getattr(model, name, None))), model)
    cells = frame.isna()
    for name in frame.columns:
        if frame[name].dtype.kind not in "biufcmM":
            numbers = pd.to_numeric(frame[name], errors="coerce")
            cells[name] |= numbers.isna() & frame[name].notna()
    odd = np.flatnonzero(cells.to_numpy().any(axis=1))[:4]
    rows = np.unique(np.r_[np.arange(min(2, len(frame))), odd])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(frame.iloc[rows])
    except Exception as exc:  # noqa: BLE001 - whatever the model raises is its refusal
        # The first sentence: scikit-learn's refusals go on with pages of advice.
        message = _one_line(str(exc)).split(". ")[0].rstrip(".")
        return f"it raised {type(exc).__name__}" + (f": {message}" if message else "")
    return None


def _read_table(path, header, model):
    """Read a CSV file as pandas does (``pd.read_csv``: its types, its empty cells); return
    ``(column names or None, DataFrame)``.

    The first row is a header when ``header`` says so; by default when the model was fitted
    on named columns, when some cell of the row is text, or when a row of numbers differs in
    kind from the rows below (:func:`_numeric_header_rule`). Without a header, the columns
    take the model's names where it has as many."""
    import pandas as pd

    rows, lines = _csv_rows(path)
    _check_widths(path, rows, lines)
    model_names = getattr(model, "feature_names_in_", None)
    if header is None:
        first = [cell for cell in rows[0] if cell.strip()]
        header = (model_names is not None or not _all_numbers(first)
                  or (len(first) == len(rows[0]) and _numbers_are_header(path, rows)))
    if header and len(rows) == 1:
        raise _InputError(f"{path!r} has a header row but no data rows.")
    try:
        frame = pd.read_csv(path, header=0 if header else None, encoding="utf-8-sig")
    except (ValueError, pd.errors.ParserError) as exc:
        raise _InputError(f"pandas cannot read {path!r} as a CSV file: "
                          f"{_one_line(str(exc))}.") from None
    if header:
        names = [str(name).strip() for name in frame.columns]
        frame.columns = names
    elif model_names is not None and len(model_names) == frame.shape[1]:
        names = None
        frame.columns = list(model_names)
    else:
        names = None
    return names, frame


def _write_frame(path, frame):
    try:
        frame.to_csv(path, index=False)
    except OSError as exc:
        raise _InputError(f"cannot write {path!r}: {exc.strerror or exc}.") from None


def _separator_hint(width, cell):
    """Where a one-column file's cell holds another separator's numbers, say so."""
    if width != 1:
        return ""
    for separator, name in ((";", "';'"), ("\t", "tabs"), ("|", "'|'"), (" ", "spaces")):
        parts = cell.strip().split(separator)
        if len(parts) > 1 and all(_is_number(part) for part in parts if part):
            return (f" The file seems to separate its values with {name}; explain reads "
                    "comma-separated values: save it with commas.")
    return ""


def _cells_text(row, shown=5):
    cells = [cell.strip() for cell in row]
    if len(cells) > shown:
        return ", ".join(cells[:shown - 1]) + f", ..., {cells[-1]}"
    return ", ".join(cells)


def _column_label(col, names):
    return f"{col + 1} ({names[col]!r})" if names is not None else f"{col + 1}"


def _write_rows(path, names, rows, what):
    """Write ``rows`` (an array of numbers or texts) as CSV, under the input's header."""
    from tqdm.auto import tqdm

    try:
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if names is not None:
                writer.writerow(names)
            with tqdm(total=len(rows), unit="rows", desc=f"writing {what}", leave=False,
                      disable=len(rows) < _PROGRESS_ROWS) as bar:
                for start in range(0, len(rows), _WRITE_CHUNK):
                    chunk = rows[start : start + _WRITE_CHUNK]
                    writer.writerows(chunk.tolist())
                    bar.update(len(chunk))
    except OSError as exc:
        raise _InputError(f"cannot write {path!r}: {exc.strerror or exc}.") from None
