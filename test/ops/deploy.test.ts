import { existsSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config.js';

/**
 * No Docker engine runs in CI, so the deployment files are checked as data: valid YAML, and
 * every variable they mention is one src/config.ts reads (and .env.example lists them all).
 */

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** The variables of src/config.ts's environment schema, read from its source. */
function configVariables(): string[] {
  const source = read('src/config.ts');
  const body = /const envSchema = z\.object\(\{([\s\S]*?)\n\}\);/.exec(source)?.[1];
  if (!body) throw new Error('envSchema not found in src/config.ts');
  return [...body.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!).sort();
}

/** Set and commented-out assignments alike: the file documents every variable. */
function exampleVariables(text: string): string[] {
  return [...text.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!).sort();
}

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string | number>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  profiles?: string[];
  ports?: string[];
  volumes?: string[];
  stop_grace_period?: string;
}

describe('deployment files', () => {
  const variables = configVariables();
  const exampleText = read('.env.example');
  const example = parseEnv(exampleText);
  // Compose resolves YAML merge keys (`<<: *anchor`); YAML 1.2 parsers need to be asked.
  const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const services = compose.services;

  it('finds the schema of src/config.ts', () => {
    expect(variables).toContain('DATABASE_URL');
    expect(variables).toContain('HTTP_PORT');
    expect(variables.length).toBeGreaterThan(20);
  });

  it('.env.example lists exactly the variables src/config.ts knows', () => {
    expect(exampleVariables(exampleText)).toEqual(variables);
    // No duplicate lines.
    expect(new Set(exampleVariables(exampleText)).size).toBe(variables.length);
  });

  it('.env.example is valid configuration as it stands', () => {
    expect(() => loadConfig(example)).not.toThrow();
    expect(loadConfig(example).httpPort).toBe(9464);
  });

  it('compose has the services, with health checks and a noeviction Redis', () => {
    expect(Object.keys(services).sort()).toEqual([
      'grafana',
      'mailpit',
      'migrate',
      'postgres',
      'prometheus',
      'redis',
      'simulator',
      'worker',
    ]);
    expect(services.postgres!.image).toBe('postgres:16');
    expect(services.postgres!.healthcheck!.test.join(' ')).toContain('pg_isready');
    expect(services.redis!.image).toBe('redis:7');
    expect(services.redis!.command).toEqual(
      expect.arrayContaining(['--maxmemory-policy', 'noeviction']),
    );
    expect(services.redis!.healthcheck!.test).toContain('ping');
    expect(services.mailpit!.healthcheck).toBeDefined();
    // Mail is caught only when asked: a plain `docker compose up` sends with .env's SMTP_URL.
    expect(services.mailpit!.profiles).toEqual(['sandbox']);
    expect(services.mailpit!.ports).toEqual(
      expect.arrayContaining(['127.0.0.1:1025:1025', '127.0.0.1:8025:8025']),
    );
    expect(services.migrate!.command).toEqual(['node', 'bin/qwn.js', 'migrate']);
  });

  it('starts the worker after healthy services and a finished migration', () => {
    const worker = services.worker!;
    expect(worker.build).toBe('.');
    expect(worker.command).toEqual(['node', 'bin/qwn.js', 'worker']);
    expect(worker.depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
      migrate: { condition: 'service_completed_successfully' },
    });
    expect(worker.ports).toEqual(['127.0.0.1:${HTTP_PORT:-9464}:9464']);
    expect(worker.environment!.HTTP_PORT).toBe(9464);
    expect(worker.environment!.HTTP_HOST).toBe('0.0.0.0');
    expect(worker.environment!.SMTP_URL).toBe('${SMTP_URL:-}');
    // Longer than the worker's 25 s shutdown grace.
    expect(Number.parseInt(worker.stop_grace_period!, 10)).toBeGreaterThan(25);
  });

  it("the worker's environment uses only known variables, with .env.example's defaults", () => {
    const env = services.worker!.environment!;
    const unknown = Object.keys(env).filter((name) => !variables.includes(name));
    expect(unknown).toEqual([]);
    for (const [name, value] of Object.entries(env)) {
      for (const ref of String(value).matchAll(/\$\{([A-Z][A-Z0-9_]*)(?::-([^}]*))?\}/g)) {
        expect(variables, `${name} refers to ${ref[1]}`).toContain(ref[1]);
        const fallback = ref[2];
        // Where .env.example sets a value, compose falls back to the same one.
        if (fallback && ref[1] === name && example[name] !== undefined) {
          expect(fallback, name).toBe(example[name]);
        }
      }
    }
    // Every setting an operator might change reaches the worker.
    const missing = variables.filter((name) => !(name in env));
    expect(missing).toEqual([]);
  });

  it('runs the simulator only under its profile, with flags qwn simulate has', () => {
    const simulator = services.simulator!;
    expect(simulator.profiles).toEqual(['simulator']);
    expect(simulator.command).toEqual([
      'node',
      'bin/qwn.js',
      'simulate',
      '--port',
      '8080',
      '--host',
      '0.0.0.0',
    ]);
    const usage = read('src/cli/simulate.ts');
    expect(usage).toContain('port: { type: ');
    expect(usage).toContain('host: { type: ');
  });

  it('runs Prometheus and Grafana only under the monitoring profile, with the files of deploy/', () => {
    for (const name of ['prometheus', 'grafana']) {
      const service = services[name]!;
      expect(service.profiles, name).toEqual(['monitoring']);
      expect(
        service.ports!.every((p) => p.startsWith('127.0.0.1:')),
        name,
      ).toBe(true);
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./'))
          expect(existsSync(new URL(`../../${source}`, import.meta.url)), volume).toBe(true);
      }
    }
    expect(services.prometheus!.volumes).toContain('./deploy/prometheus:/etc/prometheus:ro');
    expect(services.prometheus!.command).toContain('--config.file=/etc/prometheus/prometheus.yml');
    // The scrape job reaches the worker's port inside the compose network.
    const scrape = parseYaml(read('deploy/prometheus/prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    expect(scrape.rule_files).toEqual(['qwn-alerts.yml']);
    expect(scrape.scrape_configs[0]!.job_name).toBe('qwn');
    expect(scrape.scrape_configs[0]!.static_configs[0]!.targets).toEqual([
      `worker:${services.worker!.environment!.HTTP_PORT}`,
    ]);
  });

  it('Dockerfile: two stages on Node 24 LTS, compiled dist/, production dependencies, non-root', () => {
    const dockerfile = read('Dockerfile');
    const stages = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(stages).toEqual(['node:24-slim', 'node:24-slim']);
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).toContain('npm ci --omit=dev --omit=optional');
    expect(runtime).toContain('COPY --from=build /app/dist ./dist');
    expect(runtime).not.toMatch(/COPY src/);
    expect(runtime).toMatch(/HTTP_HOST=0\.0\.0\.0/);
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toMatch(/^HEALTHCHECK .*\n?.*\/healthz/m);
    expect(runtime).toContain('CMD ["node", "bin/qwn.js", "worker"]');
    // The image runs compiled JavaScript: the compiler and the demo's parts are not installed.
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    for (const devOnly of [
      'tsx',
      'esbuild',
      '@electric-sql/pglite',
      'smtp-server',
      'standardwebhooks',
    ]) {
      expect(pkg.dependencies[devOnly]).toBeUndefined();
    }
    const ignored = read('.dockerignore');
    expect(ignored).toMatch(/^\.env$/m);
    expect(ignored).toMatch(/^node_modules$/m);
    expect(ignored).toMatch(/^dist$/m);
  });
});

describe('deploy/kubernetes and deploy/systemd', () => {
  const variables = configVariables();
  const k8s = (file: string) =>
    parseYaml(read(`deploy/kubernetes/${file}`)) as {
      kind: string;
      metadata: { name: string };
      data?: Record<string, string>;
      stringData?: Record<string, string>;
      spec: Record<string, unknown>;
    };

  it('lists every manifest in the kustomization', () => {
    const kustomization = parseYaml(read('deploy/kubernetes/kustomization.yaml')) as {
      resources: string[];
    };
    expect(kustomization.resources.sort()).toEqual(
      ['configmap.yaml', 'deployment.yaml', 'migrate-job.yaml', 'pdb.yaml', 'secret.yaml'].sort(),
    );
  });

  it('configures only variables src/config.ts knows, valid as configuration, secrets apart', () => {
    const config = k8s('configmap.yaml').data!;
    const secret = k8s('secret.yaml').stringData!;
    for (const name of [...Object.keys(config), ...Object.keys(secret)]) {
      expect(variables, name).toContain(name);
    }
    expect(() => loadConfig({ ...config, ...secret })).not.toThrow();
    expect(config.HTTP_HOST).toBe('0.0.0.0');
    // Credentials live in the Secret only.
    for (const name of ['DATABASE_URL', 'QWEATHER_API_KEY', 'SMTP_URL', 'UNSUBSCRIBE_SECRET']) {
      expect(Object.keys(config)).not.toContain(name);
      expect(Object.keys(secret)).toContain(name);
    }
  });

  it('runs the workers with /healthz probes, a grace past 25 s and a disruption budget', () => {
    const deployment = k8s('deployment.yaml');
    const spec = deployment.spec as {
      replicas: number;
      selector: { matchLabels: Record<string, string> };
      template: {
        spec: {
          terminationGracePeriodSeconds: number;
          containers: {
            command: string[];
            envFrom: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
            ports: { containerPort: number }[];
            readinessProbe: { httpGet: { path: string } };
            livenessProbe: { httpGet: { path: string } };
            securityContext: { readOnlyRootFilesystem: boolean };
          }[];
        };
      };
    };
    const [worker] = spec.template.spec.containers;
    expect(worker!.command).toEqual(['node', 'bin/qwn.js', 'worker']);
    expect(worker!.envFrom).toEqual([
      { configMapRef: { name: 'qwn' } },
      { secretRef: { name: 'qwn' } },
    ]);
    expect(worker!.ports[0]!.containerPort).toBe(Number(k8s('configmap.yaml').data!.HTTP_PORT));
    expect(worker!.readinessProbe.httpGet.path).toBe('/healthz');
    expect(worker!.livenessProbe.httpGet.path).toBe('/healthz');
    expect(worker!.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(25);
    expect(spec.replicas).toBeGreaterThan(1);

    const pdb = k8s('pdb.yaml').spec as { selector: { matchLabels: Record<string, string> } };
    expect(pdb.selector.matchLabels).toEqual(spec.selector.matchLabels);

    const job = k8s('migrate-job.yaml').spec as {
      template: { spec: { containers: { command: string[] }[] } };
    };
    expect(job.template.spec.containers[0]!.command).toEqual(['node', 'bin/qwn.js', 'migrate']);
  });

  it("limits a worker's memory no lower than its heap needs in a national storm", () => {
    const spec = k8s('deployment.yaml').spec as {
      template: {
        spec: {
          containers: { resources: { requests: { memory: string }; limits: { memory: string } } }[];
        };
      };
    };
    const { resources } = spec.template.spec.containers[0]!;
    const mib = (quantity: string) => {
      const [, n, unit] = /^(\d+)(Mi|Gi)$/.exec(quantity) ?? [];
      if (!n) throw new Error(`not a quantity in Mi or Gi: ${quantity}`);
      return Number(n) * (unit === 'Gi' ? 1024 : 1);
    };
    // Node sizes its heap from the container's limit: 259 MB under 512 MiB, where the bench's
    // storm took half as much worker CPU again (BENCHMARKS.md, "A worker's memory"); 560 MB
    // under 1 GiB, where it ran as with no limit and a worker peaked near 300 MB.
    expect(mib(resources.limits.memory)).toBeGreaterThanOrEqual(1024);
    expect(mib(resources.requests.memory)).toBeGreaterThanOrEqual(300);
  });

  it('systemd: migrate then worker, SIGTERM with more than 25 s to stop, settings from a file', () => {
    const unit = read('deploy/systemd/qwn-worker.service');
    const setting = (key: string) =>
      [...unit.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]);
    expect(setting('ExecStartPre')).toEqual(['/usr/bin/node bin/qwn.js migrate']);
    expect(setting('ExecStart')).toEqual(['/usr/bin/node bin/qwn.js worker']);
    expect(setting('KillSignal')).toEqual(['SIGTERM']);
    expect(Number(setting('TimeoutStopSec')[0])).toBeGreaterThan(25);
    expect(setting('EnvironmentFile')).toEqual(['/etc/qwn/qwn.env']);
    expect(setting('Restart')).toEqual(['on-failure']);
  });
});
