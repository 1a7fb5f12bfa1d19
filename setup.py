"Package setup, driven by settings.ini (nbdev 2 layout, without pkg_resources)."
import shlex, sys
from configparser import ConfigParser
import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read('settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']

expected = 'version description keywords author author_email license min_python user lib_name'.split()
missing = [o for o in expected if o not in cfg]
if missing: sys.exit(f'settings.ini is missing {missing}')

min_python = tuple(int(o) for o in cfg['min_python'].split('.'))
if sys.version_info[:len(min_python)] < min_python:
    sys.exit(f"fastbook_bench needs Python >= {cfg['min_python']}")

licenses = {'apache2': ('Apache Software License 2.0', 'OSI Approved :: Apache Software License')}
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable', '6 - Mature', '7 - Inactive']
py_versions = ['3.10', '3.11', '3.12', '3.13']

lic = licenses.get(cfg['license'].lower(), (cfg['license'], None))
requirements = shlex.split(cfg.get('requirements', ''))
neural_requirements = shlex.split(cfg.get('neural_requirements', ''))  # the extra `fastbook_bench[neural]`
scale_requirements = shlex.split(cfg.get('scale_requirements', ''))  # the extra `fastbook_bench[scale]`: Ray
bench_requirements = shlex.split(cfg.get('bench_requirements', ''))  # `fastbook_bench[bench]`: benchmarks/, experiments/
interop_requirements = shlex.split(cfg.get('interop_requirements', ''))  # `fastbook_bench[interop]`: ranx, ir_measures, ir_datasets
dev_requirements = neural_requirements + scale_requirements + bench_requirements + interop_requirements + shlex.split(cfg.get('dev_requirements', ''))  # dev: all
supported = [v for v in py_versions if tuple(int(o) for o in v.split('.')) >= min_python]

setuptools.setup(
    name=cfg['lib_name'].replace('_', '-'),
    version=cfg['version'],
    description=cfg['description'],
    keywords=cfg['keywords'],
    author=cfg['author'],
    author_email=cfg['author_email'],
    license=lic[0],
    classifiers=['Development Status :: ' + statuses[int(cfg['status'])],
                 'Intended Audience :: ' + cfg['audience'].title(),
                 'Natural Language :: ' + cfg['language'].title()]
                + [f'Programming Language :: Python :: {v}' for v in supported]
                + ([f'License :: {lic[1]}'] if lic[1] else []),
    url=cfg['git_url'] % dict(cfg),
    packages=setuptools.find_packages(include=[cfg['lib_path'], cfg['lib_path'] + '.*']),
    include_package_data=True,
    install_requires=requirements,
    extras_require={'neural': neural_requirements, 'scale': scale_requirements, 'bench': bench_requirements, 'interop': interop_requirements, 'dev': dev_requirements},
    python_requires='>=' + cfg['min_python'],
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    zip_safe=False,
    entry_points={'console_scripts': cfg.get('console_scripts', '').split(),
                  'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
)
