# The admin's Periodic page model (unmanaged: no table is created).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("djqueue", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="PeriodicJob",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
            ],
            options={
                "verbose_name": "periodic job",
                "verbose_name_plural": "periodic",
                "abstract": False,
                "managed": False,
                "default_permissions": (),
            },
        ),
    ]
