"""The MNIST classification benchmark of Blundell et al. (2015), section 5.1.

Bayes by Backprop classifiers (Gaussian or scale-mixture prior) and same-size
baselines (plain MLP, dropout) trained on MNIST, many models at once; the paper's
Tables 1-2 and Figures 2-4. Run ``python -m bandits.mnist --help``.

Subpackages, its layers: each imports only those above it in this list
(``tests/test_imports.py`` checks it).

* :mod:`~bandits.mnist.models`: what a model is. :mod:`~bandits.mnist.models.config`, the
  settings of each command (one field per flag), their checks and the models one command
  trains (grid settings times seeds); :mod:`~bandits.mnist.models.classifiers`, ``R``
  classifiers trained at once as one batched model, and
  :mod:`~bandits.mnist.models.autograd_nets`, the same by autograd (LeNet-5, noise per
  image); :mod:`~bandits.mnist.models.priors`, the prior and posterior a setting makes.
* :mod:`~bandits.mnist.data`: :mod:`~bandits.mnist.data.splits`, the MNIST files (IDX
  format, checked), preprocessing and the train / validation / test splits.
* :mod:`~bandits.mnist.evaluation`: :mod:`~bandits.mnist.evaluation.evaluate`, one trained
  model's predictions, test error, entropy on noise images and pruning by signal-to-noise
  ratio; :mod:`~bandits.mnist.evaluation.model_files`, the files each model leaves;
  :mod:`~bandits.mnist.evaluation.markdown`, numbers and tables as text.
* :mod:`~bandits.mnist.reports`: ``report`` (:mod:`~bandits.mnist.reports.gather`, every
  model into ``models.jsonl``; :mod:`~bandits.mnist.reports.rows`;
  :mod:`~bandits.mnist.reports.tables`, Tables 1 and 2 and the others;
  :mod:`~bandits.mnist.reports.figures`, Figures 2-4 and a model's plots; and
  :mod:`~bandits.mnist.reports.report`, which runs them), and a training command's tables
  (:mod:`~bandits.mnist.reports.command_tables`).
* :mod:`~bandits.mnist.training`: :mod:`~bandits.mnist.training.train`, a training
  command (batches, checkpoints and resuming, :mod:`~bandits.mnist.training.finish` for
  what a trained model leaves); :mod:`~bandits.mnist.training.speed`, ``bench``, against
  :mod:`~bandits.mnist.training.autograd_baseline`; and
  :mod:`~bandits.mnist.training.adam_probe`, ``adam-probe``.
* :mod:`~bandits.mnist.cli`: the command line (:func:`main`), above them all.
"""

from bandits.core.startup import Command

__all__ = ["main"]

# python -m bandits.mnist and the console script bandits-mnist (__main__.py's cli), and
# main(argv) for scripts. The package itself imports nothing heavy: the command's signals
# and kernels are set before torch loads (bandits.core.startup.Command).
COMMAND = Command("bandits.mnist", "bandits.mnist.cli")
main = COMMAND.main
