"""``pymtl-fp train``'s data: the ``--dataset`` a net trains on, the ``--batch`` it allows, and the
golden engine's learning curves.

The data sets are :data:`pymtl_fp.data.DATASETS` (``digits``, ``mnist``); without ``--dataset`` a
net takes the one its input fits (:func:`pymtl_fp.data.default_dataset`).  A name the registry does
not know, or a data set whose images the net does not take, is a one-line error before anything is
loaded or simulated; so is a ``--batch`` larger than the training split.
"""

from __future__ import annotations

from pathlib import Path

from pymtl_fp.cli.errors import UserError


def dataset(args, net) -> str:
    """The data set ``net`` trains on: ``--dataset`` (checked against the net) or its default."""
    from pymtl_fp.data import check_dataset

    try:
        return check_dataset(net, args.dataset)
    except ValueError as exc:
        raise UserError(f"--dataset {args.dataset}: {exc}" if args.dataset else str(exc)) from None


def load(net, name: str, batch: int):
    """The split of data set ``name`` at ``net``'s input size; ``batch`` must fit its training set."""
    from pymtl_fp.data import dataset_for

    try:
        split = dataset_for(net, name)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    check_batch(batch, len(split.y_train), name)
    return split


def check_batch(batch: int, train_images: int, name: str) -> None:
    if batch > train_images:
        raise UserError(f"--batch {batch}: larger than the {train_images} training images of {name}")


def plot_histories(histories: list, path: Path, title: str, float64: str = "float64") -> None:
    """Learning curves (test accuracy, training loss per epoch) of every precision, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_acc, ax_loss) = plt.subplots(1, 2, figsize=(10, 4))
    for h in histories:
        epochs = range(1, len(h.test_accuracy) + 1)
        label = h.precision if h.precision == float64 else f"{h.precision}-bit fixed point"
        ax_acc.plot(epochs, [100 * a for a in h.test_accuracy], marker=".", label=label)
        ax_loss.plot(epochs, h.train_loss, marker=".", label=label)
    ax_acc.set(xlabel="epoch", ylabel="test accuracy (%)", title="test accuracy")
    ax_loss.set(xlabel="epoch", ylabel="mean training loss", title="training loss", yscale="log")
    for ax in (ax_acc, ax_loss):
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
