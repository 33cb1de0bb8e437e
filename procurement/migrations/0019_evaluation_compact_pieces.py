"""Evaluation pieces stored compactly (deflated outcome records: data, episodes), each
lane's play time (seconds), and a sealed evaluation's exposed worlds."""

import json
import zlib

from django.db import migrations, models

import procurement.models.stored_json


def pack_pieces(apps, schema_editor) -> None:
    piece_model = apps.get_model("procurement", "EvaluationPiece")
    for piece in piece_model.objects.all().iterator():
        rows = piece.outcomes or []
        piece.data = zlib.compress(json.dumps(rows, separators=(",", ":")).encode(), 6)
        piece.episodes = len(rows)
        piece.save(update_fields=["data", "episodes"])


def unpack_pieces(apps, schema_editor) -> None:
    piece_model = apps.get_model("procurement", "EvaluationPiece")
    for piece in piece_model.objects.all().iterator():
        piece.outcomes = json.loads(zlib.decompress(bytes(piece.data))) if piece.data else []
        piece.save(update_fields=["outcomes"])


class Migration(migrations.Migration):
    dependencies = [
        ("procurement", "0018_evaluation_parts"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="exposed",
            field=models.JSONField(
                blank=True,
                decoder=procurement.models.stored_json.StoredJSONDecoder,
                default=list,
                help_text="Sealed only: worlds of its range a person had played in a seat "
                "before it was sealed, [{scenario, seed, episodes}] (services.held_out).",
            ),
        ),
        migrations.AlterField(
            model_name="evaluation",
            name="seconds",
            field=models.FloatField(
                default=0.0,
                help_text="Wall time from the run's first start to its seal, restarts and "
                "waits included (each lane's own play time: EvaluationPart.seconds).",
            ),
        ),
        migrations.AddField(
            model_name="evaluationpart",
            name="seconds",
            field=models.FloatField(
                default=0.0, help_text="Time this lane spent playing, summed over its attempts."
            ),
        ),
        migrations.AddField(
            model_name="evaluationpiece",
            name="episodes",
            field=models.PositiveIntegerField(
                default=0, help_text="How many outcomes ``data`` holds."
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="evaluationpiece",
            name="data",
            field=models.BinaryField(default=b""),
            preserve_default=False,
        ),
        # nullable while the rows move, so that going back can add it to stored rows
        migrations.AlterField(
            model_name="evaluationpiece",
            name="outcomes",
            field=models.JSONField(
                decoder=procurement.models.stored_json.StoredJSONDecoder, null=True
            ),
        ),
        migrations.RunPython(pack_pieces, unpack_pieces),
        migrations.RemoveField(model_name="evaluationpiece", name="outcomes"),
    ]
