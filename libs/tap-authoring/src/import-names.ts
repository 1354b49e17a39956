/**
 * Top-level module names a distribution installs when they differ from its name (PyPI name,
 * normalised as in PEP 503 with `_`). Anything not listed is assumed to install its own name.
 */
const MODULES_OF: Record<string, string[]> = {
  beautifulsoup4: ['bs4'],
  pyyaml: ['yaml'],
  python_dateutil: ['dateutil'],
  scikit_learn: ['sklearn'],
  pillow: ['PIL'],
  opencv_python: ['cv2'],
  opencv_python_headless: ['cv2'],
  protobuf: ['google'],
  psycopg2_binary: ['psycopg2'],
  psycopg_binary: ['psycopg'],
  pymongo: ['pymongo', 'bson', 'gridfs'],
  python_dotenv: ['dotenv'],
  attrs: ['attr', 'attrs'],
  pyjwt: ['jwt'],
  pycryptodome: ['Crypto'],
  pycryptodomex: ['Cryptodome'],
  dnspython: ['dns'],
  python_magic: ['magic'],
  snowflake_connector_python: ['snowflake'],
  mysql_connector_python: ['mysql'],
  google_api_python_client: ['googleapiclient'],
  google_auth: ['google'],
  google_cloud_storage: ['google'],
  google_cloud_bigquery: ['google'],
  websocket_client: ['websocket'],
  pdfminer_six: ['pdfminer'],
  python_docx: ['docx'],
  python_pptx: ['pptx'],
  azure_storage_blob: ['azure'],
  azure_identity: ['azure'],
  msal: ['msal'],
  typing_extensions: ['typing_extensions'],
  pyodbc: ['pyodbc'],
  ruamel_yaml: ['ruamel'],
  beautifulsoup: ['BeautifulSoup'],
  html5lib: ['html5lib'],
  python_json_logger: ['pythonjsonlogger'],
  py_pdf: ['pypdf'],
  pypdf2: ['PyPDF2'],
  faker: ['faker'],
  google_genai: ['google'],
  simple_salesforce: ['simple_salesforce'],
  slack_sdk: ['slack_sdk'],
  office365_rest_python_client: ['office365'],
};

/** The distribution name of a normalised spec such as `requests==2.32.3` → `requests`. */
export function distributionName(spec: string): string {
  const m = /^[A-Za-z0-9][A-Za-z0-9._-]*/.exec(spec.trim());
  return (m?.[0] ?? spec).toLowerCase().replace(/[-_.]+/g, '_');
}

/** Modules the declared packages make importable. */
export function importableModules(packages: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const p of packages) {
    const dist = distributionName(p);
    out.add(dist);
    for (const m of MODULES_OF[dist] ?? []) out.add(m);
  }
  return out;
}
