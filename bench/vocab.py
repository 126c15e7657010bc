"""Word lists for the synthetic corpus.

Kept apart from the generator so the text the bench searches for is easy to read and
to reason about. Three tiers, on purpose:

* ``GENERAL`` words fill the shared tool-output and prose buffers, Zipf-weighted by their
  position in the list, so a search for an early word hits nearly every session and a
  late one hits fewer.
* ``TOPICS`` words appear only in the prompts, assistant text and titles of sessions on
  that topic (the manifest records each session's topic), so their hit counts are a known
  fraction of the corpus, like real project vocabulary.
* ``PLANTED`` words appear nowhere except where the generator plants them; the manifest
  lists exactly which sessions hold them, so the bench can check search answers.
"""

from __future__ import annotations

from typing import Any

GENERAL: list[str] = """
the to and a of in is for that it with on this be as not are from by or an we if at
file function error test value return data type name run should use can will new line
code update check fix build config path list set call add change need when module
import class default first result output request response server client user string
object method field key time index version query command message log status handle
missing support option local error value cache token session project branch commit merge
review schema table column migration database connection timeout retry worker queue
event handler service endpoint route payload header json parse serialize validate
exception warning debug info trace stack frame thread process memory buffer stream
async await promise callback future loop batch chunk offset limit page cursor filter
sort order group count total average metric latency throughput benchmark profile
deploy release package dependency install upgrade compile link bundle lint format
container image cluster node pod volume secret network proxy socket port host domain
certificate permission role policy account tenant organization auth login logout
password signature hash encrypt decrypt verify refresh expire revoke scope claim
component render state props hook effect context store reducer action selector
template layout style theme button input form dialog modal tooltip navigation
router middleware controller model view repository factory adapter interface
generic trait struct enum union pointer reference lifetime borrow allocate release
snapshot fixture mock stub assert expect coverage regression flaky integration unit
pipeline workflow job step artifact runner matrix trigger schedule cron webhook
document markdown readme changelog comment docstring annotation decorator macro
argument parameter variable constant literal expression statement block scope
iterator generator closure lambda recursion overflow underflow boundary edge case
upstream downstream fallback default legacy deprecated experimental stable preview
""".split()

# Identifier fragments and file names used to make code-like and path-like lines.
IDENT_PARTS: list[str] = """
user session token cache store client server request response handler config
manager service worker queue event payload result error retry timeout parse load save
fetch build render update delete create get set list find index search query item
record entry node tree graph path file dir name key value id count size offset limit
batch chunk stream buffer reader writer logger metrics auth login refresh validate
""".split()

FILE_EXTS: list[str] = ["py", "ts", "tsx", "go", "rs", "js", "md", "toml", "yaml", "json", "sql"]

LOG_LEVELS: list[str] = ["INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARN", "ERROR"]

TOPICS: dict[str, list[str]] = {
    "kubernetes": "kubectl helm ingress configmap daemonset statefulset kustomize namespace replicaset autoscaler".split(),
    "postgres": "postgres vacuum pgbouncer tablespace sequence upsert jsonb tsvector wal replica".split(),
    "frontend": "react vite tailwind storybook hydration webpack jsx suspense playwright eslint".split(),
    "rust": "cargo clippy tokio serde rustfmt borrowck axum rayon bincode nextest".split(),
    "payments": "stripe invoice refund chargeback ledger settlement payout idempotency subscription proration".split(),
    "ml": "pytorch tensor embedding tokenizer finetune gradient checkpointing epoch dataloader inference".split(),
    "auth": "oauth oidc saml jwks keycloak mfa totp passkey webauthn sso".split(),
    "ci": "github-actions buildkite dockerfile buildx artifactory sonarqube codecov dependabot renovate semver".split(),
    "search": "elasticsearch opensearch lucene bm25 stemmer analyzer shard reindex synonym facet".split(),
    "mobile": "swiftui kotlin gradle xcode testflight cocoapods jetpack compose simulator provisioning".split(),
    "observability": "prometheus grafana opentelemetry jaeger loki alertmanager histogram exemplar cardinality tracing".split(),
    "terraform": "terraform tfstate hcl provider workspace tflint atlantis drift sentinel terragrunt".split(),
    "data": "airflow dbt parquet snowflake bigquery spark dagster iceberg duckdb partition".split(),
    "cli": "argparse click subcommand stdin stdout tty ansi completion manpage shebang".split(),
    "security": "cve sast fuzzing sandbox seccomp apparmor csrf xss sqli nonce".split(),
    "docs": "mkdocs sphinx docusaurus admonition toctree frontmatter glossary sitemap tutorial diagram".split(),
}

# Sessions per topic follow the order of this list (Zipf-like), so the first topics are
# common and the last ones rare.
TOPIC_ORDER: list[str] = list(TOPICS)

# (word, number of sessions at the default 2,000; scaled with the session count, min 1).
PLANTED: list[tuple[str, int]] = [
    ("zephyrquartz", 7),
    ("quillmarrow", 1),
    ("vexlumen", 3),
    ("obsidianfjord", 25),
    ("thornwhistle", 100),
    ("кварцезефир", 4),
]

PROMPTS_EN: list[str] = [
    "Fix the failing {t} test in {f} and explain what was wrong",
    "Can you add {t} support to the {c} {w}? Keep the existing API",
    "Refactor {f} so the {c} logic lives in one place",
    "Why does the {c} {w} time out when the {t} is slow? Look at the logs",
    "Write tests for {f}, especially the {w} edge case",
    "Review the diff on this branch and point out anything risky around {t}",
    "The {c} crashes with a {w} error after the last deploy, investigate",
    "Add a {w} option to the {c} and document it in the README",
    "Migrate {f} from the legacy {w} to the new {t} setup",
    "Profile the {c} and find where the {w} latency comes from",
    "Open a PR for this change with a short description",
    "Rename {w} to {c}_{w} everywhere and update the docs",
    "Summarize what changed in {f} since last week",
    "Make the {t} integration idempotent; retries currently duplicate {w}s",
    "Explain how the {c} handles {w} expiry",
    "Clean up the warnings from the linter in {f}",
    "Bump the {t} dependency and fix whatever breaks",
    "Set up a {t} job for the {c} in CI",
]

PROMPTS_I18N: dict[str, list[str]] = {
    "ru": [
        "Почини падающий тест {t} в {f} и объясни, в чём была ошибка",
        "Добавь поддержку {t} в {c}, не меняя существующий API",
        "Почему {c} зависает, когда {t} отвечает медленно? Посмотри логи",
        "Напиши тесты для {f}, особенно для граничного случая {w}",
        "Сделай рефакторинг миграций базы данных и обнови документацию",
    ],
    "zh": [
        "修复 {f} 中失败的 {t} 测试，并解释原因",
        "为 {c} 添加 {t} 支持，保持现有接口不变",
        "为什么 {c} 在 {t} 很慢的时候会超时？请查看日志",
        "给 {f} 写单元测试，特别是 {w} 的边界情况",
        "数据库迁移脚本需要重构，请检查性能问题",
    ],
    "ja": [
        "{f} の {t} テストが失敗しているので修正してください",
        "{c} に {t} のサポートを追加してください",
        "{t} が遅いときに {c} がタイムアウトする原因を調べてください",
        "キャッシュの無効化処理をリファクタリングしてください",
    ],
    "fr": [
        "Corrige le test {t} qui échoue dans {f} et explique l'erreur",
        "Ajoute la prise en charge de {t} au {c}, sans casser l'API",
        "Pourquoi le {c} expire-t-il quand {t} est lent ? Regarde les journaux",
        "Écris des tests pour {f}, surtout le cas limite {w}",
        "Améliore la documentation du déploiement et vérifie les dépendances",
    ],
    "de": [
        "Behebe den fehlschlagenden {t}-Test in {f} und erkläre die Ursache",
        "Füge dem {c} Unterstützung für {t} hinzu, ohne die API zu ändern",
        "Warum läuft der {c} in ein Timeout, wenn {t} langsam ist? Prüfe die Logs",
        "Schreibe Tests für {f}, besonders für den Grenzfall {w}",
    ],
    "es": [
        "Arregla la prueba de {t} que falla en {f} y explica el error",
        "Añade soporte de {t} al {c} sin romper la API",
        "¿Por qué el {c} agota el tiempo cuando {t} es lento? Revisa los registros",
    ],
}

# Prose used for assistant text and thinking in each language (repeated into a buffer).
PROSE_I18N: dict[str, str] = {
    "ru": (
        "Я посмотрел код и нашёл причину ошибки. Функция возвращает пустой список, "
        "когда кэш устарел, и вызывающий код не проверяет это. Исправление простое: "
        "добавить проверку и повторный запрос. Тесты проходят, миграция базы данных "
        "не нужна. Следующий шаг — обновить документацию и открыть запрос на слияние. "
    ),
    "zh": (
        "我查看了代码并找到了错误的原因。当缓存过期时函数返回空列表，调用方没有检查这一点。"
        "修复方法很简单：添加检查并重试请求。所有测试都通过了，不需要数据库迁移。"
        "下一步是更新文档并创建合并请求。"
    ),
    "ja": (
        "コードを確認して、エラーの原因を見つけました。キャッシュが期限切れになると関数が空のリストを返し、"
        "呼び出し側はそれを確認していません。修正は簡単で、チェックと再試行を追加します。"
        "テストはすべて成功しました。次にドキュメントを更新してプルリクエストを作成します。"
    ),
    "fr": (
        "J'ai regardé le code et trouvé la cause de l'erreur. La fonction renvoie une liste "
        "vide quand le cache a expiré, et l'appelant ne le vérifie pas. La correction est "
        "simple : ajouter une vérification et réessayer la requête. Les tests passent, "
        "aucune migration de la base de données n'est nécessaire. Prochaine étape : mettre "
        "à jour la documentation et créer la demande de fusion. "
    ),
    "de": (
        "Ich habe mir den Code angesehen und die Ursache des Fehlers gefunden. Die Funktion "
        "gibt eine leere Liste zurück, wenn der Cache abgelaufen ist, und der Aufrufer prüft "
        "das nicht. Die Lösung ist einfach: eine Prüfung und einen erneuten Versuch einbauen. "
        "Alle Tests sind grün, eine Datenbankmigration ist nicht nötig. Als Nächstes "
        "aktualisiere ich die Dokumentation und öffne einen Pull Request. "
    ),
    "es": (
        "Revisé el código y encontré la causa del error. La función devuelve una lista vacía "
        "cuando la caché caduca y quien la llama no lo comprueba. La corrección es sencilla: "
        "añadir una comprobación y reintentar la petición. Las pruebas pasan y no hace falta "
        "ninguna migración de la base de datos. "
    ),
}

TITLES_EN: list[str] = [
    "Fix flaky {t} tests",
    "Add {t} support to {c}",
    "Refactor {c} {w} handling",
    "Investigate {c} timeout",
    "Migrate {w} to {t}",
    "Profile {c} latency",
    "Clean up {f} warnings",
    "Document the {c} {w} option",
    "Make {t} retries idempotent",
    "Review {t} branch changes",
]

TITLES_I18N: dict[str, list[str]] = {
    "ru": ["Исправление тестов {t}", "Рефакторинг миграций", "Отладка таймаута {c}"],
    "zh": ["修复 {t} 测试", "数据库迁移重构", "调查 {c} 超时"],
    "ja": ["{t} テストの修正", "キャッシュのリファクタリング"],
    "fr": ["Débogage du cache {c}", "Corriger les tests {t}", "Réécriture de la documentation"],
    "de": ["Größere Überarbeitung von {c}", "Fehlerbehebung {t}"],
    "es": ["Corrección de pruebas de {t}", "Migración del caché"],
}

CUSTOM_TITLES: list[str] = [
    "{t}-fix",
    "wip {c}",
    "{c} {w} rewrite",
    "release prep",
    "pairing: {t}",
    "{w} bug",
    "spike {t}",
    "oncall {c}",
]

TAGS: list[str] = ["wip", "review", "bug", "release", "spike", "ops", "done", "blocked"]

REPO_NAMES: list[str] = """
api web-app billing infra data-pipeline mobile-app auth-service search docs cli
design-system analytics gateway notifications scheduler ledger ml-platform edge-proxy
inventory admin-console sdk-python sdk-typescript terraform-modules observability
payments-core feature-flags media-service chat-backend config-service report-builder
etl-jobs warehouse storefront checkout catalog recommendations fraud-detection
identity onboarding email-templates status-page load-tester benchmarks playground
dotfiles homelab blog research-notes interview-prep advent-of-code
""".split()

OWNERS: list[str] = ["acme", "acme-corp", "platform-team", "octo-org", "sam-dev", "northwind"]


_ONSETS = "b c d f g h j k l m n p r s t v w z br ch cl cr dr fl gr pl pr sc sh sk sl sp st str th tr".split()
_VOWELS = "a e i o u a e i o ai ea ee ie io oo ou".split()
_CODAS = [""] * 6 + "n r s t l m nd nt st ck ng rk ll ss x".split()


def large_vocabulary(rng: Any, n: int) -> list[str]:
    """``n`` distinct words, most frequent first: the general words, then pseudo-words of
    one to four syllables (a realistic long tail for a text-heavy corpus: most of them
    rare, none of them planted words)."""
    words = list(dict.fromkeys(GENERAL))
    seen = set(words) | {w.lower() for w, _ in PLANTED}
    seen |= {w for topic in TOPICS.values() for w in topic}
    while len(words) < n:
        syllables = rng.choice((1, 2, 2, 2, 3, 3, 4))
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
        )
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words
