"""The MNIST classification benchmark of Blundell et al. (2015), section 5.1.

Bayes by Backprop classifiers (Gaussian or scale-mixture prior) and same-size
baselines (plain MLP, dropout) trained on MNIST, many models at once; the paper's
Tables 1-2 and Figures 2-4. Run ``python -m bandits.mnist --help``.

Modules, in the order the data flows through them:

* :mod:`~bandits.mnist.config`: the settings (one field per flag), their checks, and
  the models one command trains (grid settings times seeds);
* :mod:`~bandits.mnist.data`: the MNIST files (IDX format, checked), preprocessing
  and the train / validation / test splits;
* :mod:`~bandits.mnist.classifiers`: ``R`` classifiers trained at once as one batched
  model (:class:`~bandits.mnist.classifiers.BatchedClassifiers`);
* :mod:`~bandits.mnist.train`: a run: training, checkpoints and resuming, the
  per-model outputs;
* :mod:`~bandits.mnist.evaluate`: one trained model's predictions, test error,
  entropy on noise images, and pruning by signal-to-noise ratio;
* :mod:`~bandits.mnist.report`: CSV files, histograms, figures, and the tables of one
  command (``table.md``) and of ``--report`` (``tables.md``);
* :mod:`~bandits.mnist.speed`: ``--bench``, the training speed;
* :mod:`~bandits.mnist.cli`: the command line (:func:`main`).
"""

__all__ = ["main"]


def main(argv=None) -> int:
    """``python -m bandits.mnist`` (:func:`bandits.mnist.cli.main`). The package itself
    imports nothing heavy, so that the command can turn Ctrl-C on before torch loads."""
    from bandits.mnist.cli import main as cli_main

    return cli_main(argv)
