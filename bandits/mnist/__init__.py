"""The MNIST classification benchmark of Blundell et al. (2015), section 5.1.

Bayes by Backprop classifiers (Gaussian or scale-mixture prior) and same-size
baselines (plain MLP, dropout) trained on MNIST, many models at once; the paper's
Tables 1-2 and Figures 2-4. Run ``python -m bandits.mnist --help``.

Modules, in the order the data flows through them:

* :mod:`~bandits.mnist.config`: the settings of each command (one field per flag),
  their checks, and the models one command trains (grid settings times seeds);
* :mod:`~bandits.mnist.data`: the MNIST files (IDX format, checked), preprocessing
  and the train / validation / test splits;
* :mod:`~bandits.mnist.classifiers`: ``R`` classifiers trained at once as one batched
  model (:class:`~bandits.mnist.classifiers.BatchedClassifiers`);
  :mod:`~bandits.mnist.autograd_nets` the same by autograd (LeNet-5, noise per image);
* :mod:`~bandits.mnist.train`: a training command: training, checkpoints and
  resuming, the per-model outputs (:mod:`~bandits.mnist.model_files`) and the
  command's tables (:mod:`~bandits.mnist.command_tables`);
* :mod:`~bandits.mnist.evaluate`: one trained model's predictions, test error,
  entropy on noise images, and pruning by signal-to-noise ratio;
* ``report``: :mod:`~bandits.mnist.gather` (every model into ``models.jsonl``),
  :mod:`~bandits.mnist.rows` (the models as one table, grouped by their settings),
  :mod:`~bandits.mnist.tables` (Tables 1 and 2 and the others, written by
  :mod:`~bandits.mnist.markdown`), :mod:`~bandits.mnist.figures` (Figures 2-4, and
  a model's plots) and :mod:`~bandits.mnist.report`, which runs them;
* :mod:`~bandits.mnist.speed`: ``bench``, the training speed, against the autograd
  baseline of :mod:`~bandits.mnist.autograd_baseline`;
* :mod:`~bandits.mnist.adam_probe`: ``adam-probe``, what Adam's per-weight step size
  does to each prior's weights;
* :mod:`~bandits.mnist.cli`: the command line (:func:`main`).
"""

from bandits.core.startup import Command

__all__ = ["main"]

# python -m bandits.mnist and the console script bandits-mnist (__main__.py's cli), and
# main(argv) for scripts. The package itself imports nothing heavy: the command's signals
# and kernels are set before torch loads (bandits.core.startup.Command).
COMMAND = Command("bandits.mnist", "bandits.mnist.cli")
main = COMMAND.main
